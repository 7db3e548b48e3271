import { compactSlice } from '../../../lambda/lake/lifecycle/compact-slice.js';
import { type Slice, compactedObjectKey, compactedSlicePrefix, manifestKey, partObjectKey, partPlanKey } from '../../../lambda/lake/keys/compacted-keys.js';
import { indexKey } from '../../../lambda/lake/keys/erasure-keys.js';
import { type SliceManifest, parseManifest } from '../../../lambda/lake/manifest.js';
import type { CompactionDeps, ErasedHour, SliceErasures } from '../../../lambda/lake/ports.js';
import type { DatasetName } from '../../../lambda/datasets/registry.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import type { AcceptedTrace } from '../../../lambda/shared/domain/trace.js';
import { acceptedTrace, inlineRecord } from '../../../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';

// The switch of a slice, on hours of a few one-span traces: what compactSlice writes, the one PUT that switches
// readers, what it deletes after it, and what it tells an erasure. Each case is one or two compactions of a tiny
// hour, so that a mutation run can afford them for every mutant of the switch.

const SLICE: Slice = { orgId: 'org-a', dt: '2026-11-22', hour: '10' };
const NOW = new Date('2026-11-23T12:00:00Z');
/** The id of the one erasure request the port names: the lake knows requests by id only. */
const REQUEST = 'erasure-1';
const PARQUET = 'application/vnd.apache.parquet';

/** A bucket that logs, in order, each write (with its content type) and each delete of something. */
class LoggedBucket extends MemoryBucket {
  readonly log: string[] = [];

  override async put(key: string, body: Uint8Array, contentType?: string): Promise<void> {
    this.log.push(`put ${key} ${contentType}`);
    await super.put(key, body);
  }

  override async delete(keys: readonly string[]): Promise<void> {
    if (keys.length > 0) this.log.push(`delete ${[...keys].sort().join(' ')}`);
    await super.delete(keys);
  }
}

const deps = (bucket: MemoryBucket, extra: Partial<CompactionDeps> = {}): CompactionDeps => ({ store: bucket, now: () => NOW, ...extra });
const at = (ms: number) => () => new Date(NOW.getTime() + ms);

const trace = (): AcceptedTrace => acceptedTrace({}, 1);

/** Lands `traces` as one batch: one raw object per dataset, keyed by the first sequence number `n`. */
async function land(bucket: MemoryBucket, n: number, traces: AcceptedTrace[]): Promise<Record<DatasetName, string>> {
  const before = new Set(bucket.keys());
  await landRecords({ store: bucket }, traces.map((t, i) => inlineRecord(n + i, t)));
  const added = bucket.keys().filter((key) => !before.has(key));
  return { traces: added.find((key) => key.startsWith('traces/'))!, spans: added.find((key) => key.startsWith('spans/'))! };
}

const manifestOf = (bucket: MemoryBucket): SliceManifest => parseManifest(bucket.objects.get(manifestKey(SLICE))!.body, SLICE);
const covering = (bucket: MemoryBucket, ...keys: string[]) => keys.map((key) => ({ key, etag: bucket.objects.get(key)!.etag }));
const sizeOf = (bucket: MemoryBucket, ...keys: string[]) => keys.reduce((sum, key) => sum + bucket.objects.get(key)!.body.byteLength, 0);
const g = (generation: number) => [compactedObjectKey('traces', SLICE, generation), compactedObjectKey('spans', SLICE, generation)] as const;

/** An erasure port for the slice that matches these trace ids, and what compaction told it. */
function erasuresMatching(bucket: LoggedBucket, traceIds: readonly string[], applying = [REQUEST]) {
  const recorded: ErasedHour[] = [];
  const port: SliceErasures = {
    forSlice: async (slice) => (expect(slice).toEqual(SLICE), { applying, matching: (row) => (traceIds.includes(row.trace_id) ? [REQUEST] : []) }),
    recordHour: async (slice, removed) => {
      expect([slice, [...removed.keys()]]).toEqual([SLICE, applying]);
      bucket.log.push('record the hour');
      recorded.push(...removed.values());
    },
    indexHour: async (slice, dataset, seen) => void bucket.log.push(`index ${dataset} ${[...seen.traces].sort().join(' ')}`),
  };
  return { port, recorded };
}

describe('the switch of a slice', () => {
  it('writes a first generation, then switches readers to it with one PUT of a JSON manifest naming it and every raw object it covers', async () => {
    const bucket = new LoggedBucket();
    const [a, b] = [trace(), trace()];
    const first = await land(bucket, 1, [a, b]);
    const replay = await land(bucket, 10, [a]);
    bucket.log.length = 0;

    const result = await compactSlice(deps(bucket), SLICE);

    expect(result).toEqual({ slice: SLICE, outcome: 'compacted', generation: 1, rows: { traces: 2, spans: 2 }, rowsRead: 6, duplicatesDropped: 2, objectsWritten: 2, hashParts: 2, objectsDeleted: 0 });
    expect(bucket.log).toEqual([`put ${g(1)[0]} ${PARQUET}`, `put ${g(1)[1]} ${PARQUET}`, `put ${manifestKey(SLICE)} application/json`]);
    expect(manifestOf(bucket)).toEqual({
      version: 1,
      org_id: 'org-a',
      dt: '2026-11-22',
      hour: '10',
      generation: 1,
      compacted_at: NOW.toISOString(),
      traces: { files: [g(1)[0]], rows: 2, covered: covering(bucket, first.traces, replay.traces) },
      spans: { files: [g(1)[1]], rows: 2, covered: covering(bucket, first.spans, replay.spans) },
      superseded: [],
    });
  });

  it('compacts the raw listing its caller gives, not one of its own', async () => {
    const bucket = new LoggedBucket();
    const first = await land(bucket, 1, [trace()]);
    await land(bucket, 10, [trace(), trace()]);
    const listed = { traces: await bucket.list(first.traces), spans: await bucket.list(first.spans) };

    const result = await compactSlice(deps(bucket), SLICE, listed);

    expect(result.rows).toEqual({ traces: 1, spans: 1 });
    expect(manifestOf(bucket).traces.covered).toEqual(covering(bucket, first.traces));
  });

  it('with no manifest and nothing listed, or nothing new, is up to date and writes nothing', async () => {
    const bucket = new LoggedBucket();
    expect(await compactSlice(deps(bucket), SLICE)).toEqual({ slice: SLICE, outcome: 'up-to-date', generation: 0, rows: { traces: 0, spans: 0 }, rowsRead: 0, duplicatesDropped: 0, objectsWritten: 0, hashParts: 0, objectsDeleted: 0 });
    await land(bucket, 1, [trace()]);
    await compactSlice(deps(bucket), SLICE);
    bucket.log.length = 0;

    expect(await compactSlice(deps(bucket, { now: at(24 * 3600_000) }), SLICE)).toEqual({ slice: SLICE, outcome: 'up-to-date', generation: 1, rows: { traces: 1, spans: 1 }, rowsRead: 0, duplicatesDropped: 0, objectsWritten: 0, hashParts: 0, objectsDeleted: 0 });
    // An organization with erasure requests, none of them left to apply to this hour: nothing to record either.
    const { port, recorded } = erasuresMatching(bucket, [], []);
    expect(await compactSlice(deps(bucket, { erasures: port }), SLICE)).toMatchObject({ outcome: 'up-to-date', generation: 1 });
    expect(recorded).toEqual([]);
    expect(bucket.log).toEqual([]);
  });

  /** An hour compacted once, then its raw spans object gone and its raw traces object overwritten (a retried batch). */
  async function halfChanged(bucket: LoggedBucket): Promise<{ traces: string; spans: string }> {
    const raw = await land(bucket, 1, [trace(), trace()]);
    await compactSlice(deps(bucket), SLICE);
    await bucket.delete([raw.spans]);
    bucket.objects.set(raw.traces, { ...bucket.objects.get(raw.traces)!, etag: '"rewritten"' });
    bucket.log.length = 0;
    return raw;
  }

  it('rewrites only a dataset with new raw objects: the other is carried over covering what is listed now, and the replaced generation is kept for readers in flight', async () => {
    const bucket = new LoggedBucket();
    const raw = await halfChanged(bucket);

    const result = await compactSlice(deps(bucket), SLICE);

    expect(result).toEqual({ slice: SLICE, outcome: 'compacted', generation: 2, rows: { traces: 2, spans: 2 }, rowsRead: 4, duplicatesDropped: 2, objectsWritten: 1, hashParts: 1, objectsDeleted: 0 });
    expect(bucket.log).toEqual([`put ${g(2)[0]} ${PARQUET}`, `put ${manifestKey(SLICE)} application/json`]);
    expect(manifestOf(bucket)).toMatchObject({
      generation: 2,
      traces: { files: [g(2)[0]], rows: 2, covered: [{ key: raw.traces, etag: '"rewritten"' }] },
      spans: { files: [g(1)[1]], rows: 2, covered: [] },
      superseded: [{ generation: 1, superseded_at: NOW.toISOString(), files: [g(1)[0]] }],
    });
    expect(bucket.keys('compacted/')).toEqual([g(1)[0], g(2)[0], g(1)[1]].sort());
  });

  it('with nothing new, changes nothing until a replaced generation is past its grace period, then drops it from the manifest and deletes its objects', async () => {
    const bucket = new LoggedBucket();
    await halfChanged(bucket);
    await compactSlice(deps(bucket), SLICE);
    const switched = manifestOf(bucket);
    bucket.log.length = 0;
    const grace = { supersededGraceMs: 60_000 };

    expect(await compactSlice(deps(bucket, { ...grace, now: at(59_999) }), SLICE)).toMatchObject({ outcome: 'up-to-date', generation: 2, objectsDeleted: 0 });
    expect(bucket.log).toEqual([]);

    const result = await compactSlice(deps(bucket, { ...grace, now: at(60_000) }), SLICE);

    expect(result).toEqual({ slice: SLICE, outcome: 'cleaned', generation: 2, rows: { traces: 2, spans: 2 }, rowsRead: 0, duplicatesDropped: 0, objectsWritten: 0, hashParts: 0, objectsDeleted: 1 });
    expect(bucket.log).toEqual([`put ${manifestKey(SLICE)} application/json`, `delete ${g(1)[0]}`]);
    expect(manifestOf(bucket)).toEqual({ ...switched, superseded: [] });
  });

  it('deletes compacted objects and part plans that nothing names, up to the generation it switches to, and leaves a later one (a part plan in progress) alone', async () => {
    const bucket = new LoggedBucket();
    await land(bucket, 1, [trace()]);
    await compactSlice(deps(bucket), SLICE);
    const switchedIn = [partPlanKey(SLICE, 1, 'p0'), partObjectKey('traces', SLICE, 1, 'p0', 0, 2)];
    const abandoned = [partPlanKey(SLICE, 2, 'p1'), partObjectKey('spans', SLICE, 2, 'p1', 1, 2)];
    const inProgress = [partPlanKey(SLICE, 3, 'p2'), partObjectKey('traces', SLICE, 3, 'p2', 0, 2)];
    const unnamed = `${compactedSlicePrefix('spans', SLICE)}stray.parquet`;
    for (const key of [...switchedIn, ...abandoned, ...inProgress, unnamed]) await bucket.put(key, Buffer.from('x'));
    await land(bucket, 10, [trace()]);
    bucket.log.length = 0;

    const result = await compactSlice(deps(bucket), SLICE);

    expect(result).toMatchObject({ generation: 2, objectsDeleted: 5 });
    expect(bucket.log.slice(-1)).toEqual([`delete ${[...switchedIn, ...abandoned, unnamed].sort().join(' ')}`]);
    expect(bucket.keys('compacted/')).toEqual([...g(1), ...g(2), ...inProgress].sort());

    // The clean-up of an expired generation leaves the same: the manifest's generation is 2 now.
    const sameGeneration = partPlanKey(SLICE, 2, 'p3');
    await bucket.put(sameGeneration, Buffer.from('x'));
    expect(await compactSlice(deps(bucket, { now: at(24 * 3600_000) }), SLICE)).toMatchObject({ outcome: 'cleaned', objectsDeleted: 3 });
    expect(bucket.keys('compacted/')).toEqual([...g(2), ...inProgress].sort());
  });

  it('drops the hour index of the generation it replaces before the switch, and indexes each rewritten dataset after it', async () => {
    const bucket = new LoggedBucket();
    const [a, b] = [trace(), trace()];
    await land(bucket, 1, [a]);
    for (const dataset of ['traces', 'spans'] as const) await bucket.put(indexKey(SLICE, dataset), Buffer.from('{}'));
    bucket.log.length = 0;
    const { port, recorded } = erasuresMatching(bucket, [], []);

    await compactSlice(deps(bucket, { erasures: port }), SLICE);

    expect(bucket.log).toEqual([
      `put ${g(1)[0]} ${PARQUET}`,
      `put ${g(1)[1]} ${PARQUET}`,
      `delete ${indexKey(SLICE, 'spans')} ${indexKey(SLICE, 'traces')}`,
      `put ${manifestKey(SLICE)} application/json`,
      `index traces ${a.trace_id}`,
      `index spans ${a.trace_id}`,
    ]);
    expect(recorded).toEqual([]);

    const raw = await land(bucket, 10, [b]);
    await bucket.delete([raw.traces]);
    bucket.log.length = 0;
    await compactSlice(deps(bucket, { erasures: port }), SLICE);
    expect(bucket.log.filter((entry) => entry.startsWith('index'))).toEqual([`index spans ${[a.trace_id, b.trace_id].sort().join(' ')}`]);
  });
});

describe('the switch of a slice an erasure applies to', () => {
  it('rewrites both datasets of a compacted hour without the matched trace, keeps no earlier generation, and records the hour after every delete', async () => {
    const bucket = new LoggedBucket();
    const [a, b] = [trace(), trace()];
    const raw = await land(bucket, 1, [a, b]);
    await compactSlice(deps(bucket), SLICE);
    const bytesOfHour = sizeOf(bucket, ...g(1));
    const { port, recorded } = erasuresMatching(bucket, [a.trace_id]);
    bucket.log.length = 0;

    const result = await compactSlice(deps(bucket, { erasures: port }), SLICE);

    const bytesRewritten = sizeOf(bucket, ...g(2));
    expect(result).toEqual({ slice: SLICE, outcome: 'compacted', generation: 2, rows: { traces: 1, spans: 1 }, rowsRead: 4, duplicatesDropped: 0, objectsWritten: 2, hashParts: 2, objectsDeleted: 4, rowsErased: 2, bytesRewritten });
    expect(recorded).toEqual([{ rowsRemoved: 2, bytesRewritten, bytesOfHour, objectsDeleted: 4 }]);
    expect(manifestOf(bucket)).toMatchObject({ generation: 2, traces: { files: [g(2)[0]], rows: 1, covered: [] }, spans: { files: [g(2)[1]], rows: 1, covered: [] }, superseded: [] });
    expect(bucket.keys()).toEqual([...g(2), manifestKey(SLICE)].sort());
    expect(bucket.log.slice(0, 3)).toEqual([`put ${g(2)[0]} ${PARQUET}`, `put ${g(2)[1]} ${PARQUET}`, `put ${manifestKey(SLICE)} application/json`]);
    expect(bucket.log.slice(3, -1).sort()).toEqual([`delete ${[...g(1)].sort().join(' ')}`, `delete ${[raw.spans, raw.traces].join(' ')}`, `index spans ${b.trace_id}`, `index traces ${b.trace_id}`]);
    expect(bucket.log.at(-1)).toBe('record the hour');
  });

  it('keeps no replaced generation in its grace period either: those objects hold the erased rows', async () => {
    const bucket = new LoggedBucket();
    const [a, b] = [trace(), trace()];
    const first = await land(bucket, 1, [a]);
    await compactSlice(deps(bucket), SLICE);
    const later = await land(bucket, 10, [b]);
    await compactSlice(deps(bucket), SLICE);
    expect(manifestOf(bucket).superseded).toEqual([{ generation: 1, superseded_at: NOW.toISOString(), files: [...g(1)] }]);
    const { port, recorded } = erasuresMatching(bucket, [a.trace_id]);

    const result = await compactSlice(deps(bucket, { erasures: port }), SLICE);

    expect(result).toMatchObject({ generation: 3, rows: { traces: 1, spans: 1 }, rowsErased: 2, objectsDeleted: 6 });
    expect(recorded).toEqual([expect.objectContaining({ rowsRemoved: 2, objectsDeleted: 6 })]);
    expect(manifestOf(bucket).superseded).toEqual([]);
    expect(bucket.keys().filter((key) => !key.startsWith('manifests/'))).toEqual([...g(3), later.traces, later.spans].sort());
    expect(bucket.objects.has(first.traces)).toBe(false);
  });

  it('counts each erased row once and every other extra copy as a duplicate, and deletes the raw objects and overflow that held the trace', async () => {
    const bucket = new LoggedBucket();
    const [a, b, c] = [trace(), trace(), trace()];
    const first = await land(bucket, 1, [a, b]);
    await compactSlice(deps(bucket), SLICE);
    const replay = await land(bucket, 10, [a, b]);
    const later = await land(bucket, 20, [c]);
    const overflow = (t: AcceptedTrace) => `overflow/org_id=org-a/dt=2026-11-22/req-1/0-${t.trace_id}.json.gz`;
    for (const t of [a, c]) await bucket.put(overflow(t), Buffer.from('x'));
    const bytesOfHour = sizeOf(bucket, ...g(1), replay.traces, replay.spans, later.traces, later.spans);
    const { port, recorded } = erasuresMatching(bucket, [a.trace_id]);

    const result = await compactSlice(deps(bucket, { erasures: port }), SLICE);

    // Per dataset: 5 rows read (a, b from generation 1 and the replay, c), a's 2 erased, b's second copy dropped.
    const bytesRewritten = sizeOf(bucket, ...g(2));
    expect(result).toEqual({ slice: SLICE, outcome: 'compacted', generation: 2, rows: { traces: 2, spans: 2 }, rowsRead: 10, duplicatesDropped: 2, objectsWritten: 2, hashParts: 2, objectsDeleted: 7, rowsErased: 2, bytesRewritten });
    expect(recorded).toEqual([{ rowsRemoved: 2, bytesRewritten, bytesOfHour, objectsDeleted: 7 }]);
    expect(manifestOf(bucket)).toMatchObject({ traces: { covered: covering(bucket, later.traces) }, spans: { covered: covering(bucket, later.spans) }, superseded: [] });
    expect(bucket.keys().filter((key) => !key.startsWith('manifests/'))).toEqual([...g(2), later.traces, later.spans, overflow(c)].sort());
    expect(first.traces).not.toBe(later.traces);
  });

  it('drops a replayed trace of a request already done for the hour, and records nothing', async () => {
    const bucket = new LoggedBucket();
    const [a, b] = [trace(), trace()];
    const first = await land(bucket, 1, [b]);
    await compactSlice(deps(bucket), SLICE);
    await land(bucket, 10, [a]);
    const { port, recorded } = erasuresMatching(bucket, [a.trace_id], []);

    const result = await compactSlice(deps(bucket, { erasures: port }), SLICE);

    expect(result).toMatchObject({ generation: 2, rows: { traces: 1, spans: 1 }, rowsErased: 2, objectsDeleted: 4 });
    expect(recorded).toEqual([]);
    expect(manifestOf(bucket)).toMatchObject({ traces: { covered: covering(bucket, first.traces) }, superseded: [] });
  });

  it('compacts new raw objects none of which it matches as usual, keeping the replaced generation, and records the hour with nothing removed or rewritten', async () => {
    const bucket = new LoggedBucket();
    await land(bucket, 1, [trace()]);
    await compactSlice(deps(bucket), SLICE);
    const later = await land(bucket, 10, [trace()]);
    const bytesOfHour = sizeOf(bucket, ...g(1), later.traces, later.spans);
    const { port, recorded } = erasuresMatching(bucket, ['no-such-trace']);

    const result = await compactSlice(deps(bucket, { erasures: port }), SLICE);

    expect(result).toEqual({ slice: SLICE, outcome: 'compacted', generation: 2, rows: { traces: 2, spans: 2 }, rowsRead: 4, duplicatesDropped: 0, objectsWritten: 2, hashParts: 2, objectsDeleted: 0 });
    expect(recorded).toEqual([{ rowsRemoved: 0, bytesRewritten: 0, bytesOfHour, objectsDeleted: 0 }]);
    expect(manifestOf(bucket).superseded).toEqual([{ generation: 1, superseded_at: NOW.toISOString(), files: [...g(1)] }]);
  });

  it('records a compacted hour it matches nothing in as done, deleting nothing, even with the raw objects gone', async () => {
    const bucket = new LoggedBucket();
    const raw = await land(bucket, 1, [trace()]);
    await compactSlice(deps(bucket), SLICE);
    await bucket.delete([raw.traces, raw.spans]);
    const { port, recorded } = erasuresMatching(bucket, ['no-such-trace']);
    bucket.log.length = 0;

    const result = await compactSlice(deps(bucket, { erasures: port }), SLICE);

    expect(result).toEqual({ slice: SLICE, outcome: 'up-to-date', generation: 1, rows: { traces: 1, spans: 1 }, rowsRead: 0, duplicatesDropped: 0, objectsWritten: 0, hashParts: 0, objectsDeleted: 0 });
    expect(recorded).toEqual([{ rowsRemoved: 0, bytesRewritten: 0, bytesOfHour: sizeOf(bucket, ...g(1)), objectsDeleted: 0 }]);
    expect(bucket.log).toEqual(['record the hour']);
  });

  it('deletes what is left of an hour retention emptied (compacted objects, part plans, index) and records how many objects went', async () => {
    const bucket = new LoggedBucket();
    const a = trace();
    const raw = await land(bucket, 1, [a]);
    await compactSlice(deps(bucket), SLICE);
    await bucket.put(indexKey(SLICE, 'traces'), Buffer.from('{}'));
    await bucket.put(partPlanKey(SLICE, 2, 'p1'), Buffer.from('{}'));
    await bucket.delete([raw.traces, raw.spans, manifestKey(SLICE)]);
    const { port, recorded } = erasuresMatching(bucket, [a.trace_id]);

    const result = await compactSlice(deps(bucket, { erasures: port }), SLICE);

    expect(result).toMatchObject({ outcome: 'up-to-date', generation: 0, objectsDeleted: 0 });
    expect(recorded).toEqual([{ rowsRemoved: 0, bytesRewritten: 0, bytesOfHour: 0, objectsDeleted: 4 }]);
    expect(bucket.keys()).toEqual([]);
  });

  it('finishes a switch stopped before its deletes from the record in its manifest: the replaced generation goes, and the outcome counts the rewrite\'s rows', async () => {
    const bucket = new LoggedBucket();
    const [a, b] = [trace(), trace()];
    const raw = await land(bucket, 1, [a, b]);
    await compactSlice(deps(bucket), SLICE);
    // Older than the raw objects' lifetime: only generation 1 holds a.
    await bucket.delete([raw.traces, raw.spans]);
    const bytesOfHour = sizeOf(bucket, ...g(1));
    const { port, recorded } = erasuresMatching(bucket, [a.trace_id]);
    const stopped = Object.assign(Object.create(bucket) as LoggedBucket, { delete: async () => Promise.reject(new Error('stopped after the switch')) });
    await expect(compactSlice(deps(stopped, { erasures: port }), SLICE)).rejects.toThrow('stopped after the switch');
    const bytesRewritten = sizeOf(bucket, ...g(2));
    expect(manifestOf(bucket).erasure).toEqual({ rows_removed: { [REQUEST]: 2 }, bytes_rewritten: bytesRewritten, bytes_of_hour: bytesOfHour, objects_deleted: 2, raw_holders: [] });
    expect(recorded).toEqual([]);
    bucket.log.length = 0;

    const result = await compactSlice(deps(bucket, { erasures: port }), SLICE);

    expect(result).toEqual({ slice: SLICE, outcome: 'cleaned', generation: 2, rows: { traces: 1, spans: 1 }, rowsRead: 0, duplicatesDropped: 0, objectsWritten: 0, hashParts: 0, objectsDeleted: 2 });
    expect(recorded).toEqual([{ rowsRemoved: 2, bytesRewritten, bytesOfHour, objectsDeleted: 2 }]);
    expect(bucket.log).toEqual([`delete ${[...g(1)].sort().join(' ')}`, 'record the hour']);
    expect(bucket.keys()).toEqual([...g(2), manifestKey(SLICE)].sort());
  });

  it('deletes a replaced generation no manifest names before it records an hour it finds nothing in (a switch by an earlier version stopped before its deletes)', async () => {
    const bucket = new LoggedBucket();
    const raw = [await land(bucket, 1, [trace()])];
    await compactSlice(deps(bucket), SLICE);
    raw.push(await land(bucket, 10, [trace()]));
    await compactSlice(deps(bucket), SLICE);
    await bucket.put(manifestKey(SLICE), Buffer.from(JSON.stringify({ ...manifestOf(bucket), superseded: [] })));
    await bucket.delete(raw.flatMap((objects) => [objects.traces, objects.spans]));
    const { port, recorded } = erasuresMatching(bucket, ['no-such-trace']);
    bucket.log.length = 0;

    const result = await compactSlice(deps(bucket, { erasures: port }), SLICE);

    expect(result).toMatchObject({ outcome: 'up-to-date', generation: 2, objectsDeleted: 2 });
    expect(recorded).toEqual([{ rowsRemoved: 0, bytesRewritten: 0, bytesOfHour: sizeOf(bucket, ...g(2)), objectsDeleted: 2 }]);
    expect(bucket.log).toEqual([`delete ${[...g(1)].sort().join(' ')}`, 'record the hour']);
  });

  it('writes no erasure record and records nothing when it drops only rows of requests already done', async () => {
    const bucket = new LoggedBucket();
    const [a, b] = [trace(), trace()];
    await land(bucket, 1, [b]);
    await compactSlice(deps(bucket), SLICE);
    const { port } = erasuresMatching(bucket, ['no-such-trace'], []);
    await land(bucket, 10, [a]);
    bucket.log.length = 0;

    expect(await compactSlice(deps(bucket, { erasures: port }), SLICE)).toMatchObject({ outcome: 'compacted', generation: 2 });
    expect(manifestOf(bucket)).not.toHaveProperty('erasure');
    expect(bucket.log).not.toContain('record the hour');

    const replayed = await land(bucket, 20, [a]);
    const dropping = erasuresMatching(bucket, [a.trace_id], []);
    expect(await compactSlice(deps(bucket, { erasures: dropping.port }), SLICE)).toMatchObject({ outcome: 'compacted', generation: 3, rowsErased: 2 });
    expect(manifestOf(bucket).erasure).toEqual({ rows_removed: {}, bytes_rewritten: sizeOf(bucket, ...g(3)), bytes_of_hour: expect.any(Number), objects_deleted: 6, raw_holders: [replayed.spans, replayed.traces].sort() });
    expect(bucket.log).not.toContain('record the hour');
  });

  it('finishes from the record only the requests it names: a request made after the stopped switch is applied as usual', async () => {
    const bucket = new LoggedBucket();
    const [a, b] = [trace(), trace()];
    const raw = await land(bucket, 1, [a, b]);
    await compactSlice(deps(bucket), SLICE);
    await bucket.delete([raw.traces, raw.spans]);
    const outcomes = new Map<string, ErasedHour>();
    let open = [REQUEST];
    const port: SliceErasures = {
      forSlice: async () => ({ applying: open.filter((id) => !outcomes.has(id)), matching: (row) => (row.trace_id === a.trace_id ? [REQUEST] : []) }),
      recordHour: async (_, removed) => void removed.forEach((outcome, id) => outcomes.set(id, outcome)),
    };
    const stopped = Object.assign(Object.create(bucket) as LoggedBucket, { delete: async () => Promise.reject(new Error('stopped after the switch')) });
    await expect(compactSlice(deps(stopped, { erasures: port }), SLICE)).rejects.toThrow('stopped after the switch');
    open = [REQUEST, 'erasure-2'];

    await compactSlice(deps(bucket, { erasures: port }), SLICE);

    expect([...outcomes].map(([id, outcome]) => [id, outcome.rowsRemoved])).toEqual([
      [REQUEST, 2],
      ['erasure-2', 0],
    ]);
    expect(bucket.keys()).toEqual([...g(2), manifestKey(SLICE)].sort());
  });
});
