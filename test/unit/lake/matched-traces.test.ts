/**
 * The lake's side of an erasure on a few one-span traces landed in memory: which rows the matcher is asked about and
 * how, which traces and raw objects it finds, which overflow objects go, and the hour index dropped before a switch.
 * The erasure through compaction of whole hours is test/unit/erasure/compact-and-erase.test.ts.
 */
import { indexKey } from '../../../lambda/lake/keys/erasure-keys.js';
import { overflowObjectKey } from '../../../lambda/lake/keys/overflow-keys.js';
import { dropHourIndex } from '../../../lambda/lake/lifecycle/hour-index.js';
import { deleteOverflowOf, matchedTraces } from '../../../lambda/lake/lifecycle/matched-traces.js';
import { noneSeen } from '../../../lambda/lake/lifecycle/seen-ids.js';
import type { MatchFields } from '../../../lambda/lake/ports.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import type { AcceptedTrace, TraceContext } from '../../../lambda/shared/domain/trace.js';
import { acceptedSpan, acceptedTrace, inlineRecord, traceContext } from '../../../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';
import { parquetWriteBuffer } from 'hyparquet-writer';

/** The one request a test's matcher stands for: the lake takes a row to the ids of the requests it matches. */
const REQUEST = 'er_1';
const none: readonly string[] = [];
const request = (matches: boolean): readonly string[] => (matches ? [REQUEST] : none);

const AT = '2026-11-22T10:10:00.000001Z';
const micros = (iso: string) => BigInt(Date.parse(iso)) * 1000n + BigInt(iso.slice(23, 26));

/** A one-span trace; the span names the same user and session unless given its own. */
function trace(fields: { user?: string; session?: string; spanUser?: string; spanSession?: string } = {}): AcceptedTrace {
  const user = fields.user === undefined ? 'u-1' : fields.user;
  const session = fields.session === undefined ? 's-1' : fields.session;
  const span = acceptedSpan({ timestamp: AT, user_id: fields.spanUser === undefined ? user : fields.spanUser, session_id: fields.spanSession === undefined ? session : fields.spanSession });
  return acceptedTrace({ timestamp: AT, user_id: user, session_id: session, spans: [span] });
}

let sequence = 0;
/** Lands the traces in one raw object per dataset (row groups of `rowsPerRowGroup` rows) and returns that object's listing. */
async function landed(bucket: MemoryBucket, traces: { trace: AcceptedTrace; context?: Partial<TraceContext> }[], rowsPerRowGroup?: number) {
  const before = new Set(bucket.keys());
  await landRecords({ store: bucket, ...(rowsPerRowGroup ? { rowsPerRowGroup } : {}) }, traces.map(({ trace: t, context }) => inlineRecord(++sequence, t, traceContext(context))));
  const added = (prefix: string) => bucket.list(prefix).then((objects) => objects.filter((object) => !before.has(object.key)));
  return { traces: await added('traces/'), spans: await added('spans/') };
}

describe('matchedTraces', () => {
  it('asks the matcher about every row of both datasets with its four fields, empty ids as "", received_at in µs', async () => {
    const bucket = new MemoryBucket();
    const named = trace({ user: 'alice', session: 'conv-1' });
    const anonymous = trace({ user: '', session: '' });
    const objects = await landed(bucket, [{ trace: named, context: { received_at: '2026-11-22T10:00:01.000002Z' } }, { trace: anonymous, context: { received_at: '2026-11-22T10:00:03.000004Z' } }]);
    const asked: MatchFields[] = [];
    const found = await matchedTraces(bucket, objects, (row) => (asked.push(row), none));
    const namedRow = { trace_id: named.trace_id, user_id: 'alice', session_id: 'conv-1', received_at: micros('2026-11-22T10:00:01.000002Z') };
    const anonymousRow = { trace_id: anonymous.trace_id, user_id: '', session_id: '', received_at: micros('2026-11-22T10:00:03.000004Z') };
    expect(asked).toEqual(expect.arrayContaining([namedRow, anonymousRow]));
    expect(asked).toHaveLength(4);
    expect(asked.filter((row) => row.trace_id === named.trace_id)).toEqual([namedRow, namedRow]);
    expect(found).toEqual({ traceIds: new Set(), requestsOf: new Map(), receivedDays: new Set(), holders: new Set() });
  });

  it('finds a trace through a span row alone, with the day it was received on, and only the raw objects asked about that hold it', async () => {
    const bucket = new MemoryBucket();
    const erased = trace({ user: '', spanUser: 'alice' });
    const kept = trace({ user: 'bob' });
    const first = await landed(bucket, [{ trace: erased, context: { received_at: '2026-11-22T23:59:59.999999Z' } }]);
    const second = await landed(bucket, [{ trace: kept, context: { received_at: '2026-11-23T00:00:00.000000Z' } }]);
    const objects = { traces: [...first.traces, ...second.traces], spans: [...first.spans, ...second.spans] };
    const asked = new Set([first.traces[0]!.key, second.traces[0]!.key, second.spans[0]!.key]);
    const found = await matchedTraces(bucket, objects, (row) => request(row.user_id === 'alice'), asked);
    expect(found).toEqual({ traceIds: new Set([erased.trace_id]), requestsOf: new Map([[erased.trace_id, new Set([REQUEST])]]), receivedDays: new Set(['2026-11-22']), holders: new Set([first.traces[0]!.key]) });
  });

  it('reads an object without the user, session or received_at columns as "" and 0 (only the columns it has are asked for)', async () => {
    const bucket = new MemoryBucket();
    await bucket.put('traces/org_id=org-a/dt=2026-11-22/hour=10/narrow.parquet', new Uint8Array(parquetWriteBuffer({ columnData: [{ name: 'trace_id', data: ['t-1', 't-2'], type: 'STRING' }] })));
    const objects = { traces: await bucket.list('traces/'), spans: [] };
    const asked: MatchFields[] = [];
    const found = await matchedTraces(bucket, objects, (row) => (asked.push(row), request(row.trace_id === 't-2')), new Set([objects.traces[0]!.key]));
    expect(asked).toEqual([
      { trace_id: 't-1', user_id: '', session_id: '', received_at: 0n },
      { trace_id: 't-2', user_id: '', session_id: '', received_at: 0n },
    ]);
    expect(found).toEqual({ traceIds: new Set(['t-2']), requestsOf: new Map([['t-2', new Set([REQUEST])]]), receivedDays: new Set(['1970-01-01']), holders: new Set([objects.traces[0]!.key]) });
    const idless = new MemoryBucket();
    await idless.put('spans/org_id=org-a/dt=2026-11-22/hour=10/idless.parquet', new Uint8Array(parquetWriteBuffer({ columnData: [{ name: 'user_id', data: ['alice'], type: 'STRING' }] })));
    const rows: MatchFields[] = [];
    await matchedTraces(idless, { traces: [], spans: await idless.list('spans/') }, (row) => (rows.push(row), none));
    expect(rows).toEqual([{ trace_id: '', user_id: 'alice', session_id: '', received_at: 0n }]);
  });

  it('reads every row group of an object, the match in the last', async () => {
    const bucket = new MemoryBucket();
    const traces = Array.from({ length: 5 }, (_, i) => trace({ user: `user-${i}` }));
    const objects = await landed(bucket, traces.map((t, i) => ({ trace: t, context: { received_at: `2026-11-2${i}T10:00:00.000000Z` } })), 2);
    const asked: string[] = [];
    const found = await matchedTraces(bucket, objects, (row) => (asked.push(row.trace_id), request(row.user_id === 'user-4' || row.user_id === 'user-2')));
    expect(asked.sort()).toEqual([...traces, ...traces].map((t) => t.trace_id).sort());
    expect(found.traceIds).toEqual(new Set([traces[4]!.trace_id, traces[2]!.trace_id]));
    expect(found.receivedDays).toEqual(new Set(['2026-11-24', '2026-11-22']));
  });
});

describe('deleteOverflowOf', () => {
  const context = (orgId: string, day: string, request = 'req-1') => ({ org_id: orgId, received_at: `${day}T10:00:00.000000Z`, request_id: request });
  const T1 = '00000000-0000-4000-8000-0000000000a1';
  const T2 = '00000000-0000-4000-8000-0000000000a2';

  function bucketOf(keys: readonly string[]) {
    const bucket = new MemoryBucket();
    for (const key of keys) bucket.objects.set(key, { body: new Uint8Array(1), etag: key });
    const deletes: string[][] = [];
    const remove = bucket.delete.bind(bucket);
    bucket.delete = async (batch) => (deletes.push([...batch]), remove(batch));
    return { bucket, deletes };
  }

  it('deletes the overflow objects of the matched traces on the days they were received, the 11th trace of a request and later too', async () => {
    const doomed = [0, 9, 10, 11, 123].map((index) => overflowObjectKey(context('org-a', '2026-11-22'), index, T1));
    const kept = [
      overflowObjectKey(context('org-a', '2026-11-22'), 12, T2),
      // Another tenant's object of a trace with the same id, on the same day.
      overflowObjectKey(context('org-b', '2026-11-22'), 0, T1),
      overflowObjectKey(context('org-ab', '2026-11-22'), 0, T1),
      // The same trace id on a day none of its matched rows was received on.
      overflowObjectKey(context('org-a', '2026-11-21'), 0, T1),
      'overflow/org_id=org-a/dt=2026-11-22/req-1/notes.txt',
    ];
    const { bucket, deletes } = bucketOf([...doomed, ...kept, overflowObjectKey(context('org-a', '2026-11-23', 'req-2'), 0, T2)]);
    const matched = { traceIds: new Set([T1, T2]), requestsOf: new Map([[T1, new Set([REQUEST])], [T2, new Set([REQUEST])]]), receivedDays: new Set(['2026-11-22']), holders: new Set<string>() };
    expect(await deleteOverflowOf(bucket, 'org-a', matched)).toBe(doomed.length + 1);
    expect(deletes).toHaveLength(1);
    expect([...deletes[0]!].sort()).toEqual([...doomed, kept[0]!].sort());
    expect(bucket.keys('overflow/org_id=org-b/')).toHaveLength(1);
    expect(bucket.keys()).toEqual(expect.arrayContaining(kept.slice(1)));
  });

  it('lists each day received, and sends no delete when nothing matched', async () => {
    const { bucket, deletes } = bucketOf([overflowObjectKey(context('org-a', '2026-11-23'), 3, T2), overflowObjectKey(context('org-a', '2026-11-22'), 0, T2)]);
    expect(await deleteOverflowOf(bucket, 'org-a', { traceIds: new Set([T2]), requestsOf: new Map(), receivedDays: new Set(['2026-11-22', '2026-11-23']), holders: new Set() })).toBe(2);
    expect(bucket.keys()).toEqual([]);
    expect(await deleteOverflowOf(bucket, 'org-a', { traceIds: new Set([T1]), requestsOf: new Map(), receivedDays: new Set(['2026-11-22']), holders: new Set() })).toBe(0);
    expect(deletes).toHaveLength(1);
  });
});

describe('dropHourIndex', () => {
  it('deletes both datasets\' index of the hour and no other hour\'s, and sends no delete for an hour without one', async () => {
    const bucket = new MemoryBucket();
    const hour = { orgId: 'org-a', dt: '2026-11-22', hour: '10' };
    const others = [indexKey({ ...hour, hour: '11' }, 'traces'), indexKey({ ...hour, orgId: 'org-ab' }, 'traces'), indexKey({ ...hour, dt: '2026-11-23' }, 'spans')];
    for (const key of [indexKey(hour, 'traces'), indexKey(hour, 'spans'), ...others]) bucket.objects.set(key, { body: new Uint8Array(1), etag: key });
    let deletes = 0;
    const remove = bucket.delete.bind(bucket);
    bucket.delete = async (keys) => (deletes++, remove(keys));
    await dropHourIndex(bucket, hour);
    expect(bucket.keys()).toEqual(others.sort());
    await dropHourIndex(bucket, hour);
    expect(deletes).toBe(1);
  });
});

describe('noneSeen', () => {
  it('is three empty sets, new each time', () => {
    const seen = noneSeen();
    expect(seen).toEqual({ users: new Set(), sessions: new Set(), traces: new Set() });
    seen.users.add('alice');
    expect(noneSeen().users.size).toBe(0);
  });
});
