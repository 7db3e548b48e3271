import { randomBytes } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { compactPending } from '../../../lambda/compaction/compact-pending.js';
import { compactQueuedSlices } from '../../../lambda/compaction/compact-queued-slices.js';
import type { SliceMessageBody } from '../../../lambda/compaction/slice-message.js';
import { type ErasureRequest, newRequest } from '../../../lambda/erasure/erasure-record.js';
import { type ErasureSecret, StoredErasures, erasureStatus, planErasures } from '../../../lambda/erasure/stored-erasures.js';
import type { DatasetName } from '../../../lambda/datasets/registry.js';
import { type Slice, manifestKey } from '../../../lambda/lake/keys/compacted-keys.js';
import { HOUR_PREFIXES } from '../../../lambda/lake/keys/hour-prefixes.js';
import { overflowObjectKey } from '../../../lambda/lake/keys/overflow-keys.js';
import { partitionPath } from '../../../lambda/lake/keys/partition.js';
import type { LakeStore } from '../../../lambda/lake/ports.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import type { AcceptedTrace, TraceContext } from '../../../lambda/shared/domain/trace.js';
import { acceptedSpan, acceptedTrace, inlineRecord, traceContext } from '../../../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';
import { manifests, rowsOf, visible } from '../compaction/bucket-views.js';

/**
 * "Every step is a crash point": each scenario runs one message through the deployed worker once cleanly to count
 * its S3 calls, then, for every call N of that run, on a copy of the set-up bucket: a run that stops at call N, a redelivery
 * that stops at call N again (if it gets that far), and a redelivery that runs clean, as SQS delivers a failed
 * message again (and may deliver a done one twice). After the clean one the bucket must hold what a run without
 * failures leaves: no erased row anywhere, every kept row readable exactly once, every status true.
 */

const NOW = new Date('2026-11-23T12:00:00Z');
const SECRET: ErasureSecret = { get: async () => Buffer.alloc(32, 7) };
const HOUR_10: Slice = { orgId: 'org-a', dt: '2026-11-22', hour: '10' };
const HOUR_11: Slice = { orgId: 'org-a', dt: '2026-11-22', hour: '11' };

type StoreCall = keyof LakeStore;

const MULTIPART = ['createMultipartUpload', 'uploadPart', 'completeMultipartUpload'] as const;
/** The multipart calls of a run and the call after each (by 1-based position): where a large object's write can stop. */
const multipartStops = (calls: readonly StoreCall[]) => calls.flatMap((name, i) => ((MULTIPART as readonly StoreCall[]).includes(name) ? [i + 1, i + 2] : [])).filter((n, i, all) => all.indexOf(n) === i && n <= calls.length);

/**
 * How the process stops at call N: `refused`, S3 answers it with an error and does nothing; `lost`, S3 does it and
 * the process dies before it reads the answer. Either way every later call of the run fails: the process is gone.
 */
type Stop = 'refused' | 'lost';

function stoppingStore(bucket: MemoryBucket, stopAt: number, stop: Stop): { store: LakeStore; calls: StoreCall[] } {
  const calls: StoreCall[] = [];
  const call = async <T>(name: StoreCall, run: () => Promise<T>): Promise<T> => {
    calls.push(name);
    const n = calls.length;
    if (n > stopAt || (n === stopAt && stop === 'refused')) throw new Error(`stopped at call ${stopAt} (${name})`);
    const result = await run();
    if (n === stopAt) throw new Error(`stopped after call ${stopAt} (${name})`);
    return result;
  };
  const store: LakeStore = {
    list: (prefix) => call('list', () => bucket.list(prefix)),
    get: (key) => call('get', () => bucket.get(key)),
    open: (object) => call('open', () => bucket.open(object)),
    put: (key, body) => call('put', () => bucket.put(key, body)),
    createMultipartUpload: (key) => call('createMultipartUpload', () => bucket.createMultipartUpload(key)),
    uploadPart: (key, uploadId, partNumber, body) => call('uploadPart', () => bucket.uploadPart(key, uploadId, partNumber, body)),
    completeMultipartUpload: (key, uploadId, parts) => call('completeMultipartUpload', () => bucket.completeMultipartUpload(key, uploadId, parts)),
    abortMultipartUpload: (key, uploadId) => call('abortMultipartUpload', () => bucket.abortMultipartUpload(key, uploadId)),
    delete: (keys) => call('delete', () => bucket.delete(keys)),
  };
  return { store, calls };
}

/** One run of the worker over one message, through `store`: true when the worker reports the message done. */
async function deliver(store: LakeStore, body: SliceMessageBody): Promise<boolean> {
  const deps = { store, now: () => NOW, erasures: new StoredErasures(store, SECRET), uploadPartBytes: 5 * 1024 * 1024 };
  const outcome = await compactQueuedSlices(deps, [{ messageId: 'm-1', body: JSON.stringify(body) }]);
  return outcome.failedMessageIds.length === 0;
}

const message = (slice: Slice, kind: 'slice' | 'expire', extra: Partial<SliceMessageBody> = {}): SliceMessageBody => ({
  v: 1,
  kind,
  org_id: slice.orgId,
  dt: slice.dt,
  hour: slice.hour,
  reason: kind === 'expire' ? 'retention' : 'new',
  planned_at: NOW.toISOString(),
  ...extra,
});

const rowId: Record<DatasetName, (row: Record<string, unknown>) => string> = {
  traces: (row) => row.trace_id as string,
  spans: (row) => `${row.trace_id as string}/${row.span_id as string}`,
};

/** Row ids as the landed traces hold them, per dataset. */
const idsOf = (traces: readonly AcceptedTrace[]): Record<DatasetName, string[]> => ({
  traces: traces.map((trace) => trace.trace_id).sort(),
  spans: traces.flatMap((trace) => trace.spans.map((span) => `${trace.trace_id}/${span.span_id}`)).sort(),
});

/** What the read plan leaves a reader now: the objects it names that are missing, and the row ids of the rest. */
async function readable(bucket: MemoryBucket): Promise<{ missing: string[]; ids: Record<DatasetName, string[]> }> {
  const missing: string[] = [];
  const ids = { traces: [] as string[], spans: [] as string[] };
  for (const dataset of ['traces', 'spans'] as const) {
    const named = new Set(manifests(bucket).flatMap((manifest) => manifest[dataset].files));
    missing.push(...[...named].filter((key) => !bucket.objects.has(key)));
    if (missing.length > 0) continue;
    ids[dataset] = (await visible(bucket, dataset)).map(rowId[dataset]).sort();
  }
  return { missing, ids };
}

/** Keys of the objects that hold any of `needles`: Parquet read back decompressed, overflow objects gunzipped, the rest as stored. */
async function holding(bucket: MemoryBucket, needles: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const [key, object] of bucket.objects) {
    const text = key.endsWith('.parquet')
      ? JSON.stringify(await rowsOf(bucket, key), (_, value: unknown) => (typeof value === 'bigint' ? String(value) : value))
      : Buffer.from(key.endsWith('.gz') ? gunzipSync(object.body) : object.body).toString('utf8');
    if (needles.some((needle) => text.includes(needle))) found.push(key);
  }
  return found;
}

/** Problems with the kept rows: `exact` asks for each exactly once, else at least once (a state between two steps). */
async function keptProblems(bucket: MemoryBucket, kept: Record<DatasetName, string[]>, exact: boolean, ignore: (id: string) => boolean = () => false): Promise<string[]> {
  const { missing, ids } = await readable(bucket);
  if (missing.length > 0) return [`the read plan names missing objects: ${missing.join(', ')}`];
  const problems: string[] = [];
  for (const dataset of ['traces', 'spans'] as const) {
    const seen = ids[dataset].filter((id) => !ignore(id));
    const lost = kept[dataset].filter((id) => !seen.includes(id));
    if (lost.length > 0) problems.push(`${lost.length} kept ${dataset} rows unreadable`);
    if (exact && seen.length !== kept[dataset].length) problems.push(`${dataset}: ${seen.length} rows readable, ${kept[dataset].length} kept`);
  }
  return problems;
}

const trace = (user: string, hour: number, spans = 2): AcceptedTrace => {
  const at = `2026-11-22T${String(hour).padStart(2, '0')}:10:00.000001Z`;
  return acceptedTrace({ user_id: user, timestamp: at, spans: Array.from({ length: spans }, (_, i) => acceptedSpan({ timestamp: at, input: `marker-${user} step ${i}` }, i)) });
};

const context = (hour: number, request: string): TraceContext => traceContext({ request_id: request, received_at: `2026-11-22T${String(hour).padStart(2, '0')}:10:01.000000Z` });

let sequence = 1;
/** Lands the traces of one hour, one record each (one raw object per dataset), and compacts every pending hour. */
async function landAndCompact(bucket: MemoryBucket, hour: number, traces: readonly AcceptedTrace[]): Promise<void> {
  await landRecords({ store: bucket }, traces.map((t, i) => inlineRecord(sequence++, t, context(hour, `req-${hour}-${i}`))));
  await compactPending({ store: bucket, now: () => NOW, erasures: new StoredErasures(bucket, SECRET) }, { includeOpenHours: true });
}

/** A message to run, on a bucket set up for it, and what must hold between steps and at the end. */
interface World {
  /** Which calls of the clean run to stop at (default: every one). */
  stopsAt?: (calls: readonly StoreCall[]) => number[];
  bucket: MemoryBucket;
  body: SliceMessageBody;
  /** What must hold in the state a stop leaves in `bucket` (a copy of the set-up one), before any retry. */
  stopped(bucket: MemoryBucket): Promise<string[]>;
  /** What must hold in `bucket` once a redelivery ran clean. */
  finished(bucket: MemoryBucket): Promise<string[]>;
}

/**
 * Generation 1 of hour 10, then a late trace. `large`: its spans make a compacted object above S3's multipart part
 * size, so the object is written in parts.
 */
async function plainCompaction(large: boolean): Promise<World> {
  const bucket = new MemoryBucket();
  const early = [trace('bob', 10), trace('carol', 10)];
  await landAndCompact(bucket, 10, early);
  const spans = large ? Array.from({ length: 18 }, (_, i) => acceptedSpan({ input: randomBytes(300 * 1024).toString('base64') }, i)) : [acceptedSpan({ input: 'late' })];
  const late = acceptedTrace({ user_id: 'dave', timestamp: '2026-11-22T10:20:00.000001Z', spans });
  await landRecords({ store: bucket }, [inlineRecord(sequence++, late, context(10, 'req-late'))]);
  const kept = idsOf([...early, late]);
  return {
    bucket,
    body: message(HOUR_10, 'slice'),
    ...(large ? { stopsAt: multipartStops } : {}),
    stopped: (stopped) => keptProblems(stopped, kept, true),
    finished: async (finished) => {
      const problems = await keptProblems(finished, kept, true);
      const generations = manifests(finished).map((manifest) => manifest.generation);
      if (generations.join() !== '2') problems.push(`generations ${generations.join()}, not 2`);
      return problems;
    },
  };
}

/**
 * Hour 10 compacted with alice's two traces (one of them with an overflow object) among bob's and carol's; two
 * requests: alice's user id, and one of her trace ids (that trace counts for both). `withRaw` false: the raw
 * objects are gone, as every hour older than the raw objects' lifetime is deployed.
 */
async function erasure(withRaw: boolean): Promise<World> {
  const bucket = new MemoryBucket();
  const alice = [trace('alice', 10), trace('alice', 10)];
  const others = [trace('bob', 10), trace('carol', 10)];
  await landAndCompact(bucket, 10, [alice[0]!, others[0]!, alice[1]!, others[1]!]);
  for (const [owner, index] of [[alice[0]!, 0], [others[0]!, 1]] as const) {
    await bucket.put(overflowObjectKey(context(10, `req-10-${index}`), 0, owner.trace_id), gzipSync(JSON.stringify(owner)));
  }
  if (!withRaw) await bucket.delete([...bucket.keys('traces/'), ...bucket.keys('spans/')]);
  const erasures = new StoredErasures(bucket, SECRET);
  const requests = [
    newRequest('org-a', { user_ids: ['alice'], session_ids: [], trace_ids: [] }, new Date('2026-11-23T11:00:00Z')),
    newRequest('org-a', { user_ids: [], session_ids: [], trace_ids: [alice[1]!.trace_id] }, new Date('2026-11-23T11:00:01Z')),
  ];
  for (const request of requests) await erasures.put(request);
  await planErasures(bucket, erasures, SECRET, () => NOW);
  const kept = idsOf(others);
  const erased = new Set(idsOf(alice).traces);
  const needles = ['marker-alice', 'alice', ...erased];
  return {
    bucket,
    body: message(HOUR_10, 'slice', { reason: 'erasure' }),
    stopped: (stopped) => keptProblems(stopped, kept, false, (id) => erased.has(id.split('/')[0]!)),
    finished: async (finished) => {
      const after = new StoredErasures(finished, SECRET);
      await planErasures(finished, after, SECRET, () => NOW);
      const problems = await keptProblems(finished, kept, true);
      const left = await holding(finished, needles);
      if (left.length > 0) problems.push(`erased rows left in ${left.join(', ')}`);
      if ((await holding(finished, ['marker-bob'])).filter((key) => key.startsWith('overflow/')).length !== 1) problems.push("bob's overflow object is gone");
      const statuses = await Promise.all(requests.map(async (request) => erasureStatus(after, (await after.request('org-a', request.erasure_id)) as ErasureRequest)));
      const expected = [
        { status: 'done', hours_found: 1, hours_done: 1, rows_removed: 6 },
        { status: 'done', hours_found: 1, hours_done: 1, rows_removed: 3 },
      ];
      const got = statuses.map(({ status, hours_found, hours_done, rows_removed }) => ({ status, hours_found, hours_done, rows_removed }));
      if (JSON.stringify(got) !== JSON.stringify(expected)) problems.push(`statuses ${JSON.stringify(got)}`);
      return problems;
    },
  };
}

/** Hours 10 and 11 compacted; hour 10 past retention. `step` 2: the first step already ran. */
async function expiry(step: 1 | 2): Promise<World> {
  const bucket = new MemoryBucket();
  await landAndCompact(bucket, 10, [trace('bob', 10), trace('carol', 10)]);
  const later = [trace('bob', 11), trace('carol', 11)];
  await landAndCompact(bucket, 11, later);
  if (step === 2 && !(await deliver(bucket, message(HOUR_10, 'expire', { delete_compacted: false })))) throw new Error('the first step failed');
  const kept = idsOf(later);
  const inHour10 = (id: string) => !later.some((t) => id.startsWith(t.trace_id));
  const hourKeys = (inBucket: MemoryBucket, prefixes: readonly string[]) => prefixes.flatMap((prefix) => inBucket.keys(prefix)).filter((key) => key.includes(partitionPath(HOUR_10)));
  return {
    bucket,
    body: message(HOUR_10, 'expire', { delete_compacted: step === 2 }),
    stopped: (stopped) => keptProblems(stopped, kept, true, inHour10),
    finished: async (finished) => {
      const problems = await keptProblems(finished, kept, true);
      const gone = step === 1 ? [...HOUR_PREFIXES.raw, ...HOUR_PREFIXES.manifests, 'compacted/plans/'] : [...HOUR_PREFIXES.raw, ...HOUR_PREFIXES.manifests, ...HOUR_PREFIXES.compacted];
      const left = hourKeys(finished, gone);
      if (left.length > 0) problems.push(`hour 10 keeps ${left.join(', ')}`);
      if (step === 1 && hourKeys(finished, HOUR_PREFIXES.compacted.slice(0, 2)).length === 0) problems.push("the first step deleted the compacted objects, before the readers' grace");
      if (!finished.objects.has(manifestKey(HOUR_11))) problems.push('hour 11 lost its manifest');
      return problems;
    },
  };
}

describe('every failure between two steps of the lake is recoverable', () => {
  it.each([
    ['a compaction of an hour with a previous generation', () => plainCompaction(false), ['list', 'get', 'open', 'put', 'delete']],
    ['a compaction that writes its object in parts (stopped at and after each multipart call)', () => plainCompaction(true), MULTIPART],
    ['an erasure of an hour with raw objects', () => erasure(true), ['list', 'get', 'open', 'put', 'delete']],
    ['an erasure of an hour without raw objects (older than their lifetime)', () => erasure(false), ['list', 'get', 'open', 'put', 'delete']],
    ["an expiry's first step (raw objects, manifest, part plans)", () => expiry(1), ['list', 'delete']],
    ["an expiry's second step (compacted objects, index)", () => expiry(2), ['list', 'delete']],
  ] as const)('%s: stopped after any S3 call, the redeliveries finish it and every status is true', async (_name, setUp, kinds) => {
    const world = await setUp();
    const setUpBucket = world.bucket.copy();
    const counted = stoppingStore(world.bucket, Infinity, 'lost');
    expect(await deliver(counted.store, world.body)).toBe(true);
    expect(await world.finished(world.bucket)).toEqual([]);
    expect(counted.calls.length).toBeGreaterThanOrEqual(kinds.length);
    expect([...new Set(counted.calls)]).toEqual(expect.arrayContaining([...kinds]));

    const stops = world.stopsAt?.(counted.calls) ?? counted.calls.map((_, i) => i + 1);
    expect(stops.length).toBeGreaterThanOrEqual(kinds.length);

    const problems: string[] = [];
    for (const stopAt of stops) {
      for (const stop of ['refused', 'lost'] as const) {
        const bucket = setUpBucket.copy();
        const at = `stopped ${stop === 'refused' ? 'at' : 'after'} call ${stopAt} (${counted.calls[stopAt - 1]!})`;
        if (await deliver(stoppingStore(bucket, stopAt, stop).store, world.body)) problems.push(`${at}: the worker reported the message done`);
        problems.push(...(await world.stopped(bucket)).map((problem) => `${at}, before a retry: ${problem}`));
        await deliver(stoppingStore(bucket, stopAt, stop).store, world.body);
        if (!(await deliver(bucket, world.body))) problems.push(`${at}: the clean redelivery failed`);
        problems.push(...(await world.finished(bucket)).map((problem) => `${at}: ${problem}`));
      }
    }
    expect(problems).toEqual([]);
  });
});
