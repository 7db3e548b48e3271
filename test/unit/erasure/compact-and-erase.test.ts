import { compactPending } from '../../../lambda/compaction/compact-pending.js';
import { compactAndErase } from '../../../lambda/compaction/compact-and-erase.js';
import { newRequest } from '../../../lambda/erasure/erasure-record.js';
import { outcomePrefix, requestKey } from '../../../lambda/lake/keys/erasure-keys.js';
import { type ErasureSecret, StoredErasures, erasureStatus, planErasures } from '../../../lambda/erasure/stored-erasures.js';
import { compactSlice } from '../../../lambda/lake/lifecycle/compact-slice.js';
import { indexKey } from '../../../lambda/lake/keys/erasure-keys.js';
import { partPlanPrefix } from '../../../lambda/lake/keys/compacted-keys.js';
import { expireHour } from '../../../lambda/lake/lifecycle/expire-hour.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import type { AcceptedTrace } from '../../../lambda/shared/domain/trace.js';
import { acceptedSpan, acceptedTrace, inlineRecord, traceContext } from '../../../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';
import { manifests, rowsOf, visible } from '../compaction/bucket-views.js';

const NOW = new Date('2026-11-23T12:00:00Z');
const SECRET: ErasureSecret = { get: async () => Buffer.alloc(32, 7) };

/** A trace of `user` in hour `hour` of 2026-11-22; its spans carry no user id (only the trace row names the user). */
function traceOf(user: string, hour: number, marker = `marker-${user}`): AcceptedTrace {
  const at = `2026-11-22T${String(hour).padStart(2, '0')}:10:00.000001Z`;
  return acceptedTrace({ user_id: user, timestamp: at, spans: [acceptedSpan({ timestamp: at, input: `${marker} said hello` }, 0), acceptedSpan({ timestamp: at, input: `${marker} again` }, 1)] });
}

async function lakeOfThreeHours(bucket: MemoryBucket): Promise<void> {
  let n = 1;
  const records = [];
  for (const hour of [10, 11, 12]) for (const user of ['alice', 'bob', 'carol']) if (!(user === 'alice' && hour === 12)) records.push(inlineRecord(n++, traceOf(user, hour), traceContext({ request_id: `req-${n}` })));
  await landRecords({ store: bucket }, records);
}

/** Keys of the objects holding `marker`, Parquet read back decompressed (a compressed page hides its strings), the rest as stored. */
async function holding(bucket: MemoryBucket, marker: string): Promise<string[]> {
  const found: string[] = [];
  for (const [key, object] of bucket.objects) {
    const text = key.endsWith('.parquet') ? JSON.stringify(await rowsOf(bucket, key), (_, value: unknown) => (typeof value === 'bigint' ? String(value) : value)) : Buffer.from(object.body).toString('utf8');
    if (text.includes(marker)) found.push(key);
  }
  return found;
}

describe('erasure through compaction', () => {
  it('rewrites only the hours holding the user, removes every row of their traces, and keeps everyone else exactly once', async () => {
    const bucket = new MemoryBucket();
    const erasures = new StoredErasures(bucket, SECRET);
    const deps = { store: bucket, now: () => NOW, erasures };
    await lakeOfThreeHours(bucket);
    await compactPending(deps, { includeOpenHours: true });
    const before = { traces: await visible(bucket, 'traces'), spans: await visible(bucket, 'spans') };
    expect(bucket.keys('erasures/index/')).toHaveLength(6);

    const request = newRequest('org-a', { user_ids: ['alice'], session_ids: [], trace_ids: [] }, new Date('2026-11-23T11:00:00Z'));
    await erasures.put(request);
    const run = await compactAndErase(deps, SECRET, { includeOpenHours: true });

    expect(run.erasures.finished).toEqual([request.erasure_id]);
    const status = await erasureStatus(erasures, (await erasures.request('org-a', request.erasure_id))!);
    expect(status).toMatchObject({ status: 'done', hours_found: 2, hours_done: 2, rows_removed: 6, selector: null, selector_kept_as: 'hmac-sha256' });
    expect(status.bytes_rewritten).toBeGreaterThan(0);
    expect(status.bytes_rewritten).toBeLessThanOrEqual(1.2 * status.bytes_of_hours);
    // Hour 12 never held alice: it was neither rewritten nor visited.
    expect(manifests(bucket).map((m) => [m.hour, m.generation])).toEqual([['10', 2], ['11', 2], ['12', 1]]);
    // No byte of hers anywhere: not in compacted objects, raw objects, old generations or the request itself.
    expect(await holding(bucket, 'marker-alice')).toEqual([]);
    expect(await holding(bucket, 'alice')).toEqual([]);
    expect((await holding(bucket, 'marker-bob')).length).toBeGreaterThan(0);

    const after = { traces: await visible(bucket, 'traces'), spans: await visible(bucket, 'spans') };
    expect(after.traces.map((row) => row.user_id).sort()).toEqual(before.traces.map((row) => row.user_id).filter((user) => user !== 'alice').sort());
    const others = (rows: Record<string, unknown>[]) => rows.filter((row) => !String(row.input ?? '').includes('alice')).map((row) => JSON.stringify(row, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).sort();
    expect(after.spans.length).toBe(before.spans.length - 4);
    expect(others(after.spans)).toEqual(others(before.spans));
  });

  it('drops a matching trace replayed after the erasure is done, through the keyed hash alone', async () => {
    const bucket = new MemoryBucket();
    const erasures = new StoredErasures(bucket, SECRET);
    const deps = { store: bucket, now: () => NOW, erasures };
    const old = traceOf('alice', 10);
    await landRecords({ store: bucket }, [inlineRecord(1, old), inlineRecord(2, traceOf('bob', 10))]);
    await compactPending(deps, { includeOpenHours: true });
    const request = newRequest('org-a', { user_ids: ['alice'], session_ids: [], trace_ids: [] }, new Date('2026-11-23T11:00:00Z'));
    await erasures.put(request);
    await compactAndErase(deps, SECRET, { includeOpenHours: true });
    expect(Buffer.from(bucket.objects.get(requestKey('org-a', request.erasure_id))!.body).toString()).not.toContain('alice');

    // A replay lands her trace again (another first sequence number, so another key), then a trace she sends after the request.
    const later = traceOf('alice', 10, 'marker-new');
    await landRecords({ store: bucket }, [inlineRecord(7, old), inlineRecord(8, later, traceContext({ received_at: '2026-11-23T11:30:00.000000Z', request_id: 'req-later' }))]);
    const run = await compactAndErase(deps, SECRET, { includeOpenHours: true });
    expect(run.compacted.map((c) => c.rowsErased)).toEqual([3]);
    expect(await holding(bucket, 'marker-alice')).toEqual([]);
    // Received after the request: new data, kept.
    expect((await holding(bucket, 'marker-new')).length).toBeGreaterThan(0);
    expect(bucket.keys(outcomePrefix('org-a', request.erasure_id))).toHaveLength(1);
  });

  it('finds the hours from the index, without reading any Parquet of hours that do not hold the user', async () => {
    const bucket = new MemoryBucket();
    const erasures = new StoredErasures(bucket, SECRET);
    await lakeOfThreeHours(bucket);
    await compactPending({ store: bucket, now: () => NOW, erasures }, { includeOpenHours: true });
    for (const key of bucket.keys('traces/').concat(bucket.keys('spans/'))) bucket.objects.delete(key);
    const request = newRequest('org-a', { user_ids: ['alice'], session_ids: [], trace_ids: [] }, NOW);
    expect(await erasures.findHours(request)).toEqual(['2026-11-22/10', '2026-11-22/11']);
    expect(bucket.objects.has(indexKey({ orgId: 'org-a', dt: '2026-11-22', hour: '12' }, 'traces'))).toBe(true);
  });

  it('searches an hour whose index is there for one dataset only (a switch drops both; one alone is not the whole hour)', async () => {
    const bucket = new MemoryBucket();
    const erasures = new StoredErasures(bucket, SECRET);
    await landRecords({ store: bucket }, [inlineRecord(1, traceOf('bob', 10))]);
    await compactPending({ store: bucket, now: () => NOW, erasures }, { includeOpenHours: true });
    await bucket.delete([indexKey({ orgId: 'org-a', dt: '2026-11-22', hour: '10' }, 'traces')]);
    const request = newRequest('org-a', { user_ids: ['alice'], session_ids: [], trace_ids: [] }, NOW);
    expect(await erasures.findHours(request)).toEqual(['2026-11-22/10']);
  });

  it('finds a user who reached an hour only in a generation whose index writes were killed after the switch', async () => {
    const bucket = new MemoryBucket();
    const erasures = new StoredErasures(bucket, SECRET);
    const deps = { store: bucket, now: () => NOW, erasures };
    await landRecords({ store: bucket }, [inlineRecord(1, traceOf('bob', 10))]);
    await compactPending(deps, { includeOpenHours: true });
    await landRecords({ store: bucket }, [inlineRecord(2, traceOf('alice', 10))]);
    bucket.failWrite = (key) => key.startsWith('erasures/index/');
    expect((await compactPending(deps, { includeOpenHours: true })).failed).toHaveLength(1);
    bucket.failWrite = () => false;
    expect(manifests(bucket).map((m) => m.generation)).toEqual([2]);

    const request = newRequest('org-a', { user_ids: ['alice'], session_ids: [], trace_ids: [] }, NOW);
    expect(await erasures.findHours(request)).toEqual(['2026-11-22/10']);
    await erasures.put(request);
    await compactAndErase(deps, SECRET, { includeOpenHours: true });
    expect(await holding(bucket, 'marker-alice')).toEqual([]);
  });

  it('deletes the compacted objects, part plans and index of an hour whose raw objects and manifest retention already deleted, before it records the hour done', async () => {
    const bucket = new MemoryBucket();
    const erasures = new StoredErasures(bucket, SECRET);
    const deps = { store: bucket, now: () => NOW, erasures };
    await landRecords({ store: bucket }, [inlineRecord(1, traceOf('alice', 10)), inlineRecord(2, traceOf('bob', 10))]);
    await compactPending(deps, { includeOpenHours: true });
    const slice = { orgId: 'org-a', dt: '2026-11-22', hour: '10' };
    await bucket.put(`${partPlanPrefix(slice)}left-behind.json`, Buffer.from('{}'));
    await expireHour(bucket, { slice, deleteCompacted: false });
    expect((await holding(bucket, 'marker-alice')).length).toBeGreaterThan(0);

    const request = newRequest('org-a', { user_ids: ['alice'], session_ids: [], trace_ids: [] }, NOW);
    await erasures.put(request);
    const run = await compactAndErase(deps, SECRET, { includeOpenHours: true });
    expect(run.erasures.finished).toEqual([request.erasure_id]);
    expect(await holding(bucket, 'marker-alice')).toEqual([]);
    expect(bucket.keys('compacted/')).toEqual([]);
    expect(bucket.keys('erasures/index/')).toEqual([]);
  });

  it.each([
    ['the first delete after the switch (old generations, raw objects)', 'delete'],
    ['the write of the hour\'s outcome', 'outcome'],
  ] as const)('resumes after a crash at %s: the next run finishes the hour and nothing of the user is left', async (_at, point) => {
    const bucket = new MemoryBucket();
    let crashes = 1;
    const crashing = Object.assign(Object.create(bucket) as MemoryBucket, {
      delete: async (keys: readonly string[]) => {
        if (point === 'delete' && crashes-- > 0) throw new Error('killed before the deletes');
        return bucket.delete(keys);
      },
    });
    bucket.failWrite = (key) => point === 'outcome' && key.startsWith('erasures/outcomes/') && crashes-- > 0;
    const erasures = new StoredErasures(crashing, SECRET);
    const deps = { store: crashing, now: () => NOW, erasures };
    await lakeOfThreeHours(bucket);
    await compactPending(deps, { includeOpenHours: true });
    const request = newRequest('org-a', { user_ids: ['alice'], session_ids: [], trace_ids: [] }, new Date('2026-11-23T11:00:00Z'));
    await erasures.put(request);

    const crashed = await compactAndErase(deps, SECRET, { includeOpenHours: true });
    expect(crashed.failed).toHaveLength(1);
    expect(crashed.erasures.finished).toEqual([]);
    // Killed before the deletes, the old generation and the raw objects still hold her rows; killed at the outcome, not.
    expect((await holding(bucket, 'marker-alice')).length > 0).toBe(point === 'delete');
    expect((await erasureStatus(erasures, (await erasures.request('org-a', request.erasure_id))!)).status).toBe('running');

    const resumed = await compactAndErase(deps, SECRET, { includeOpenHours: true });
    expect(resumed.failed).toEqual([]);
    expect(resumed.erasures.finished).toEqual([request.erasure_id]);
    expect(await holding(bucket, 'marker-alice')).toEqual([]);
    expect(await holding(bucket, 'alice')).toEqual([]);
    const after = await visible(bucket, 'spans');
    expect(new Set(after.map((row) => `${row.trace_id as string}/${row.span_id as string}`)).size).toBe(after.length);
    expect(after).toHaveLength(2 * 6);
  });

  it('reports, for each request one rewrite applied, the rows of the traces it matched: its own, not the hour\'s', async () => {
    const bucket = new MemoryBucket();
    const erasures = new StoredErasures(bucket, SECRET);
    const deps = { store: bucket, now: () => NOW, erasures };
    const alice = [traceOf('alice', 10), traceOf('alice', 10)];
    const bob = traceOf('bob', 10);
    await landRecords({ store: bucket }, [...alice, bob, traceOf('carol', 10)].map((trace, i) => inlineRecord(i + 1, trace, traceContext({ request_id: `req-${i}` }))));
    await compactPending(deps, { includeOpenHours: true });
    const requested = new Date('2026-11-23T11:00:00Z');
    const requests = [
      newRequest('org-a', { user_ids: ['alice'], session_ids: [], trace_ids: [] }, requested),
      newRequest('org-a', { user_ids: ['bob'], session_ids: [], trace_ids: [] }, requested),
      // One of alice's traces again: a trace two requests match counts for both.
      newRequest('org-a', { user_ids: [], session_ids: [], trace_ids: [alice[0]!.trace_id] }, requested),
    ];
    for (const request of requests) await erasures.put(request);

    const run = await compactAndErase(deps, SECRET, { includeOpenHours: true });

    expect(run.compacted.map((c) => c.rowsErased)).toEqual([9]);
    const statuses = await Promise.all(requests.map(async (request) => erasureStatus(erasures, (await erasures.request('org-a', request.erasure_id))!)));
    expect(statuses.map((status) => [status.status, status.rows_removed, status.hours_found, status.hours_done])).toEqual([
      ['done', 6, 1, 1],
      ['done', 3, 1, 1],
      ['done', 3, 1, 1],
    ]);
  });

  it('counts an hour another request\'s rewrite applied a request to before its search among the hours found, as well as done', async () => {
    const bucket = new MemoryBucket();
    const erasures = new StoredErasures(bucket, SECRET);
    const deps = { store: bucket, now: () => NOW, erasures };
    await lakeOfThreeHours(bucket);
    await compactPending(deps, { includeOpenHours: true });
    const first = newRequest('org-a', { user_ids: ['bob'], session_ids: [], trace_ids: [] }, new Date('2026-11-23T11:00:00Z'));
    await erasures.put(first);
    const plan = await planErasures(bucket, erasures, SECRET, () => NOW);
    // Sent after the planner looked: still pending (not searched) when the workers rewrite bob's hours, which hold carol too.
    const second = newRequest('org-a', { user_ids: ['carol'], session_ids: [], trace_ids: [] }, new Date('2026-11-23T11:30:00Z'));
    await erasures.put(second);
    for (const slice of plan.slices) await compactSlice(deps, slice);
    await planErasures(bucket, erasures, SECRET, () => NOW);

    const status = await erasureStatus(erasures, (await erasures.request('org-a', second.erasure_id))!);
    expect((await erasures.request('org-a', second.erasure_id))!.hours).toEqual([]);
    expect(status).toMatchObject({ status: 'done', hours_found: 3, hours_done: 3, rows_removed: 9 });
    expect(await holding(bucket, 'marker-carol')).toEqual([]);
  });
});
