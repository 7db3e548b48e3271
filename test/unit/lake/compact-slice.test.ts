import { randomBytes } from 'node:crypto';
import { parquetMetadata } from 'hyparquet';
import { compactPending } from '../../../lambda/compaction/compact-pending.js';
import { compactSlice, partOf, wins } from '../../../lambda/lake/lifecycle/compact-slice.js';
import type { CompactionDeps } from '../../../lambda/lake/ports.js';
import { compactedObjectKey, manifestKey } from '../../../lambda/lake/keys/compacted-keys.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import type { DatasetName } from '../../../lambda/datasets/registry.js';
import type { AcceptedTrace } from '../../../lambda/shared/domain/trace.js';
import { acceptedSpan, acceptedTrace, inlineRecord, traceContext } from '../../../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';
import { manifests, rowsOf, visible } from '../compaction/bucket-views.js';

const SLICE = { orgId: 'org-a', dt: '2026-11-22', hour: '10' };
const NOW = new Date('2026-11-23T12:00:00Z');

const ids = (rows: Record<string, unknown>[], dataset: DatasetName) =>
  rows.map((row) => (dataset === 'traces' ? (row.trace_id as string) : `${row.trace_id as string}/${row.span_id as string}`)).sort();

function expectedIds(traces: AcceptedTrace[], dataset: DatasetName): string[] {
  return (dataset === 'traces' ? traces.map((t) => t.trace_id) : traces.flatMap((t) => t.spans.map((s) => `${t.trace_id}/${s.span_id}`))).sort();
}

const deps = (bucket: MemoryBucket, extra: Partial<CompactionDeps> = {}): CompactionDeps => ({ store: bucket, now: () => NOW, ...extra });

describe('compaction', () => {
  it('folds duplicate raw objects (a replay over landed batches) into one object per dataset with every row once', async () => {
    const bucket = new MemoryBucket();
    const traces = Array.from({ length: 12 }, (_, i) => acceptedTrace({}, i % 4));
    const records = traces.map((t, i) => inlineRecord(i + 1, t));
    await landRecords({ store: bucket }, records.slice(0, 6));
    await landRecords({ store: bucket }, records.slice(6));
    // The replay of an overlapping range: other first records, so other keys, holding the same rows again.
    await landRecords({ store: bucket }, records.slice(3, 9));
    expect(ids(await visible(bucket, 'traces'), 'traces')).toHaveLength(18);

    const run = await compactPending(deps(bucket));

    expect(run).toMatchObject({ slicesSeen: 1, open: 0, failed: [] });
    expect(run.compacted).toEqual([expect.objectContaining({ outcome: 'compacted', generation: 1, rows: { traces: 12, spans: 18 }, duplicatesDropped: 6 + 9, objectsWritten: 2 })]);
    for (const dataset of ['traces', 'spans'] as const) {
      expect(bucket.keys(`compacted/${dataset}/`)).toEqual([`compacted/${dataset}/org_id=org-a/dt=2026-11-22/hour=10/g000001.parquet`]);
      expect(ids(await visible(bucket, dataset), dataset)).toEqual(expectedIds(traces, dataset));
    }
    const [manifest] = manifests(bucket);
    expect(manifest?.traces.covered.map((c) => c.key)).toEqual(bucket.keys('traces/'));
  });

  it('keeps every column value: a compacted row equals the raw row it came from', async () => {
    const bucket = new MemoryBucket();
    const traces = [acceptedTrace({ attributes: '{"tags":["a","b"]}' }, 3), acceptedTrace({}, 0)];
    traces[0]!.spans[1]!.error_message = 'boom';
    traces[0]!.spans[2]!.parent_span_id = traces[0]!.spans[0]!.span_id;
    await landRecords({ store: bucket }, traces.map((t, i) => inlineRecord(i + 1, t)));
    const key = (k: Record<string, unknown>) => `${k.trace_id as string}/${(k.span_id as string) ?? ''}`;
    const before = { traces: await visible(bucket, 'traces'), spans: await visible(bucket, 'spans') };

    await compactPending(deps(bucket));

    for (const dataset of ['traces', 'spans'] as const) {
      const after = await visible(bucket, dataset);
      expect(after.sort((a, b) => key(a).localeCompare(key(b)))).toEqual(before[dataset].sort((a, b) => key(a).localeCompare(key(b))));
    }
  });

  it('keeps the copy received last when the same trace id was accepted twice with different content', async () => {
    const bucket = new MemoryBucket();
    const first = acceptedTrace({ root_span_name: 'first' }, 1);
    const second = { ...first, root_span_name: 'second' };
    await landRecords({ store: bucket }, [inlineRecord(1, second, traceContext({ request_id: 'req-2', received_at: '2026-11-22T10:05:00.000000Z' }))]);
    await landRecords({ store: bucket }, [inlineRecord(2, first, traceContext({ request_id: 'req-1', received_at: '2026-11-22T10:00:00.000000Z' }))]);

    await compactPending(deps(bucket));

    expect((await visible(bucket, 'traces')).map((row) => [row.root_span_name, row.request_id])).toEqual([['second', 'req-2']]);
    expect((await visible(bucket, 'spans')).map((row) => row.request_id)).toEqual(['req-2']);
  });

  it('orders copies by received_at, then request_id, then input and row, so the choice is deterministic', () => {
    const row = (receivedAt: bigint, requestId: string) => ({ received_at: receivedAt, request_id: requestId });
    expect(wins({ row: row(2n, 'a'), input: 0, index: 0 }, { row: row(1n, 'z'), input: 9, index: 9 })).toBe(true);
    expect(wins({ row: row(1n, 'b'), input: 0, index: 0 }, { row: row(1n, 'a'), input: 9, index: 9 })).toBe(true);
    expect(wins({ row: row(1n, 'a'), input: 1, index: 0 }, { row: row(1n, 'a'), input: 0, index: 9 })).toBe(true);
    expect(wins({ row: row(1n, 'a'), input: 0, index: 0 }, { row: row(1n, 'a'), input: 0, index: 1 })).toBe(false);
  });

  it('recompacts an hour when late data arrives, keeps the replaced generation for a grace period, then deletes it', async () => {
    const bucket = new MemoryBucket();
    const early = [acceptedTrace({}, 2), acceptedTrace({}, 2)];
    await landRecords({ store: bucket }, early.map((t, i) => inlineRecord(i + 1, t)));
    await compactPending(deps(bucket));
    const late = [acceptedTrace({}, 1)];
    await landRecords({ store: bucket }, [inlineRecord(10, late[0]!), inlineRecord(11, early[0]!)]);
    // Before recompaction the late rows are served from raw, the re-sent one twice (the documented window).
    expect(ids(await visible(bucket, 'traces'), 'traces')).toHaveLength(4);

    const second = await compactPending(deps(bucket));

    expect(second.compacted).toEqual([expect.objectContaining({ outcome: 'compacted', generation: 2, rows: { traces: 3, spans: 5 } })]);
    expect(ids(await visible(bucket, 'traces'), 'traces')).toEqual(expectedIds([...early, ...late], 'traces'));
    expect(bucket.keys('compacted/traces/')).toHaveLength(2);
    expect(manifests(bucket)[0]?.superseded).toEqual([expect.objectContaining({ generation: 1 })]);

    const later = await compactPending(deps(bucket, { now: () => new Date(NOW.getTime() + 3 * 3600_000) }));

    expect(later.compacted).toEqual([expect.objectContaining({ outcome: 'cleaned', objectsDeleted: 2 })]);
    expect(bucket.keys('compacted/traces/')).toEqual(['compacted/traces/org_id=org-a/dt=2026-11-22/hour=10/g000002.parquet']);
    expect(manifests(bucket)[0]?.superseded).toEqual([]);
    expect((await compactPending(deps(bucket))).compacted).toEqual([]);
  });

  it('recompacts when a covered raw object is overwritten (a retried batch) and reads only the listed version', async () => {
    const bucket = new MemoryBucket();
    const traces = [acceptedTrace({}, 1), acceptedTrace({}, 1)];
    await landRecords({ store: bucket }, [inlineRecord(1, traces[0]!)]);
    await compactPending(deps(bucket));
    await landRecords({ store: bucket }, [inlineRecord(1, traces[0]!), inlineRecord(2, traces[1]!)]);

    const run = await compactPending(deps(bucket));

    expect(run.compacted).toEqual([expect.objectContaining({ generation: 2, rows: { traces: 2, spans: 2 } })]);
    expect(ids(await visible(bucket, 'traces'), 'traces')).toEqual(expectedIds(traces, 'traces'));
  });

  it('splits a large hour deterministically by trace id into parts written as row groups of one object, a trace and all its spans in one part', async () => {
    const bucket = new MemoryBucket();
    const traces = Array.from({ length: 40 }, (_, i) => acceptedTrace({}, 1 + (i % 3)));
    await landRecords({ store: bucket }, traces.map((t, i) => inlineRecord(i + 1, t)));
    await landRecords({ store: bucket }, traces.slice(10).map((t, i) => inlineRecord(i + 100, t)));

    let collections = 0;
    const run = await compactPending(deps(bucket, { rowsPerPart: 20, rowsPerRowGroup: 7, collectGarbage: () => collections++ }));

    const [result] = run.compacted;
    expect(result?.hashParts).toBeGreaterThan(2 * 3);
    // Before each part: the previous part's rows are garbage by then, and two parts' rows must not coexist.
    expect(collections).toBe(result?.hashParts);
    expect(bucket.keys('compacted/spans/')).toEqual([compactedObjectKey('spans', SLICE, 1)]);
    expect(ids(await visible(bucket, 'spans'), 'spans')).toEqual(expectedIds(traces, 'spans'));
    // Row groups follow the parts in order: each holds rows of one part, and no part comes back later.
    const { body } = bucket.objects.get(compactedObjectKey('spans', SLICE, 1))!;
    const groups = parquetMetadata(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer).row_groups.map((g) => Number(g.num_rows));
    const spanRows = await rowsOf(bucket, compactedObjectKey('spans', SLICE, 1));
    const spanInputRows = traces.reduce((n, t) => n + t.spans.length, 0) + traces.slice(10).reduce((n, t) => n + t.spans.length, 0);
    // Not rounded up to a power of two: groups this small land without hash orders, so no part could skip any.
    const parts = Math.ceil(spanInputRows / 20);
    const partOfGroup: number[] = [];
    let start = 0;
    for (const size of groups) {
      const inGroup = new Set(spanRows.slice(start, start + size).map((row) => partOf(row.trace_id as string, parts)));
      expect(inGroup.size).toBe(1);
      partOfGroup.push([...inGroup][0]!);
      start += size;
    }
    expect(partOfGroup).toEqual([...partOfGroup].sort((a, b) => a - b));
    expect(new Set(partOfGroup).size).toBeGreaterThan(3);
  });

  it('splits by input bytes as well as rows and, past the byte budget, opens each input once per part instead of holding them all', async () => {
    const bucket = new MemoryBucket();
    const traces = Array.from({ length: 40 }, (_, i) => acceptedTrace({}, 1 + (i % 3)));
    for (let batch = 0; batch < 4; batch++) await landRecords({ store: bucket }, traces.slice(batch * 10, batch * 10 + 10).map((t, i) => inlineRecord(batch * 10 + i + 1, t)));
    const rawSpans = bucket.keys('spans/');
    const spanBytes = rawSpans.reduce((sum, key) => sum + bucket.objects.get(key)!.body.byteLength, 0);
    const opened: string[] = [];
    const counting = Object.assign(Object.create(bucket) as MemoryBucket, {
      open: (object: Parameters<MemoryBucket['open']>[0]) => (opened.push(object.key), bucket.open(object)),
    });

    const first = await compactSlice(deps(counting, { bytesPerPart: Math.ceil(spanBytes / 3) }), SLICE);

    expect(bucket.keys('compacted/spans/')).toEqual([compactedObjectKey('spans', SLICE, 1)]);
    expect(first.rows.spans).toBe(expectedIds(traces, 'spans').length);
    expect(ids(await visible(bucket, 'spans'), 'spans')).toEqual(expectedIds(traces, 'spans'));
    // One pass for the row count, then one per part (3 by bytes; not rounded up, as no input is hash-ordered): never all inputs held at once.
    for (const key of rawSpans) expect(opened.filter((k) => k === key)).toHaveLength(1 + 3);
    // Deterministic: the same inputs give the same object, byte for byte.
    const again = new MemoryBucket();
    for (const [key, object] of bucket.objects) if (!key.startsWith('compacted/') && !key.startsWith('manifests/')) again.objects.set(key, object);
    await compactSlice(deps(again, { bytesPerPart: Math.ceil(spanBytes / 3) }), SLICE);
    for (const key of bucket.keys('compacted/')) expect(again.objects.get(key)!.body).toEqual(bucket.objects.get(key)!.body);
  });

  /**
   * Kills a recompaction of `bucket`'s slice at each of its writes in turn (`abortFails`: also before it could
   * abort its upload) and reruns it: readers see the old generation until the rerun's manifest switch, then the
   * new one; the rerun writes the same objects as an undisturbed run, and no upload is left open but the killed one's.
   */
  async function killAtEveryWrite(bucket: MemoryBucket, extra: Partial<CompactionDeps>, abortFails: boolean): Promise<string[]> {
    const all = await visible(bucket, 'traces');
    const writes: string[] = [];
    const probe = bucket.copy();
    probe.failWrite = (key, operation) => (writes.push(`${operation} ${key}`), false);
    await compactSlice(deps(probe, extra), SLICE);

    for (let failAt = 0; failAt < writes.length; failAt++) {
      const copy = bucket.copy();
      copy.abortFails = abortFails;
      let n = 0;
      copy.failWrite = () => n++ === failAt;
      await expect(compactSlice(deps(copy, extra), SLICE)).rejects.toThrow('injected failure');
      // The manifest write is the last one: any failure leaves the previous generation in place.
      expect(copy.objects.get(manifestKey(SLICE))).toEqual(bucket.objects.get(manifestKey(SLICE)));
      expect(ids(await visible(copy, 'traces'), 'traces')).toEqual(ids(all, 'traces'));
      const killedMidUpload = writes[failAt]!.startsWith('uploadPart') || writes[failAt]!.startsWith('completeMultipartUpload');
      expect(copy.uploads.size).toBe(abortFails && killedMidUpload ? 1 : 0);
      copy.failWrite = () => false;
      await compactSlice(deps(copy, extra), SLICE);
      expect(ids(await visible(copy, 'traces'), 'traces')).toEqual([...new Set(ids(all, 'traces'))]);
      expect(copy.keys('compacted/')).toEqual(probe.keys('compacted/'));
      // Byte for byte (Buffer.equals: a deep toEqual over megabytes takes minutes).
      for (const key of probe.keys('compacted/')) expect(Buffer.from(copy.objects.get(key)!.body).equals(probe.objects.get(key)!.body)).toBe(true);
      expect(copy.uploads.size).toBe(abortFails && killedMidUpload ? 1 : 0);
    }
    return writes;
  }

  it('can be killed at any write and rerun: readers see the old or the new generation, never a mix, and nothing is left over', async () => {
    const bucket = new MemoryBucket();
    const traces = Array.from({ length: 6 }, () => acceptedTrace({}, 2));
    await landRecords({ store: bucket }, traces.map((t, i) => inlineRecord(i + 1, t)));
    await compactPending(deps(bucket));
    await landRecords({ store: bucket }, [inlineRecord(20, acceptedTrace({}, 1)), inlineRecord(21, traces[0]!)]);

    const writes = await killAtEveryWrite(bucket, {}, false);

    expect(writes.map((w) => w.split(' ')[0])).toEqual(['put', 'put', 'put']);
  });

  describe('an object larger than an upload part', () => {
    // Random (incompressible) text of ~1.4 MB per span: the spans object is ~8.4 MB, two parts of the 5 MiB minimum.
    const bulky = () => randomBytes(1_050_000).toString('base64');
    const extra: Partial<CompactionDeps> = { rowsPerRowGroup: 1, uploadPartBytes: 5 * 1024 * 1024 };

    async function bulkyBucket(): Promise<{ bucket: MemoryBucket; traces: AcceptedTrace[] }> {
      const bucket = new MemoryBucket();
      const traces = Array.from({ length: 3 }, () => ({ ...acceptedTrace({}, 0), spans: [0, 1].map((i) => acceptedSpan({ input: bulky() }, i)) }));
      await landRecords({ store: bucket }, traces.map((t, i) => inlineRecord(i + 1, t)));
      return { bucket, traces };
    }

    it('is uploaded in parts of at least 5 MiB and appears whole, and only, at CompleteMultipartUpload', async () => {
      const { bucket, traces } = await bulkyBucket();
      const seen: string[] = [];
      bucket.failWrite = (key, operation) => {
        seen.push(`${operation} ${key.split('/')[1]} visible=${bucket.objects.has(compactedObjectKey('spans', SLICE, 1))}`);
        return false;
      };

      const result = await compactSlice(deps(bucket, extra), SLICE);

      expect(seen).toEqual([
        'put traces visible=false',
        'createMultipartUpload spans visible=false',
        'uploadPart spans visible=false',
        'uploadPart spans visible=false',
        'completeMultipartUpload spans visible=false',
        'put org_id=org-a visible=true',
      ]);
      expect(result).toMatchObject({ objectsWritten: 2, rows: { traces: 3, spans: 6 } });
      expect(bucket.objects.get(compactedObjectKey('spans', SLICE, 1))!.etag).toMatch(/-2"$/);
      expect(bucket.uploads.size).toBe(0);
      expect(ids(await visible(bucket, 'spans'), 'spans')).toEqual(expectedIds(traces, 'spans'));
      expect((await visible(bucket, 'spans')).map((row) => (row.input as string).length)).toEqual(Array(6).fill(1_400_000));
    });

    it('can be killed mid-upload and rerun; the upload is aborted, or (killed before it could abort) left to the lifecycle rule', async () => {
      const { bucket } = await bulkyBucket();
      await compactPending(deps(bucket));
      await landRecords({ store: bucket }, [inlineRecord(20, { ...acceptedTrace({}, 0), spans: [acceptedSpan({ input: bulky() }, 0)] })]);

      for (const abortFails of [false, true]) {
        const writes = await killAtEveryWrite(bucket, extra, abortFails);
        expect(writes.map((w) => w.split(' ')[0])).toEqual(['put', 'createMultipartUpload', 'uploadPart', 'uploadPart', 'completeMultipartUpload', 'put']);
      }
    }, 60_000);
  });

  it('leaves open hours to the schedule unless asked, and reports a failing slice without stopping the others', async () => {
    const bucket = new MemoryBucket();
    await landRecords({ store: bucket }, [inlineRecord(1, acceptedTrace({ timestamp: '2026-11-23T11:59:00.000000Z' }, 1)), inlineRecord(2, acceptedTrace({}, 1))]);
    bucket.objects.set(manifestKey(SLICE), { body: Buffer.from('not json'), etag: '"x"' });

    const run = await compactPending(deps(bucket));

    expect(run).toMatchObject({ slicesSeen: 2, open: 1, compacted: [], failed: [{ slice: 'org-a/2026-11-22/10', error: expect.stringContaining('not JSON') }] });
    const all = await compactPending(deps(bucket), { includeOpenHours: true });
    expect(all.compacted.map((c) => c.slice.hour)).toEqual(['11']);
  });
});
