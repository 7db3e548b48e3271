import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { compactQueuedSlices } from '../../../lambda/compaction/compact-queued-slices.js';
import { compactSlice, deleteUnreferenced } from '../../../lambda/lake/lifecycle/compact-slice.js';
import { type Slice, manifestKey, partObjectKey, partPlanKey } from '../../../lambda/lake/keys/compacted-keys.js';
import { composeWorker } from '../../../lambda/compaction/compose.js';
import { parseManifest } from '../../../lambda/lake/manifest.js';
import { partWorkersFor } from '../../../lambda/lake/lifecycle/part-plan.js';
import { indexKey } from '../../../lambda/lake/keys/erasure-keys.js';
import { compactPart, switchParts } from '../../../lambda/lake/lifecycle/part-workers.js';
import { planCompaction } from '../../../lambda/compaction/plan-compaction.js';
import { type CompactionMessage, InvalidSliceMessageError, type SliceMessage, SWITCH_WAIT_LIMIT_MS, parseCompactionMessage, sliceGroupId } from '../../../lambda/compaction/slice-message.js';
import type { DatasetName } from '../../../lambda/datasets/registry.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import { expireHour } from '../../../lambda/lake/lifecycle/expire-hour.js';
import type { AcceptedTrace } from '../../../lambda/shared/domain/trace.js';
import { COMPACTION_MAX_RECEIVE_COUNT, COMPACTION_VISIBILITY_TIMEOUT } from '../../../lib/constructs/compaction.js';
import { FifoQueueModel, type WorkerInvocation, drainWithEventSource } from '../../../devkit/fakes/fifo-queue-model.js';
import { quietTelemetry } from '../../../devkit/fakes/quiet-telemetry.js';
import { acceptedTrace, inlineRecord, traceContext } from '../../../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';
import { rowsOf, visible } from '../compaction/bucket-views.js';

const SLICE: Slice = { orgId: 'org-a', dt: '2026-11-22', hour: '10' };
const NOW = new Date('2026-11-23T12:00:00Z');
const MINUTE = 60_000;

const manifestOf = (bucket: MemoryBucket) => parseManifest(bucket.objects.get(manifestKey(SLICE))!.body, SLICE);

const ids = (rows: Record<string, unknown>[], dataset: DatasetName) =>
  rows.map((row) => (dataset === 'traces' ? (row.trace_id as string) : `${row.trace_id as string}/${row.span_id as string}`)).sort();

const expectedIds = (traces: AcceptedTrace[], dataset: DatasetName) =>
  (dataset === 'traces' ? traces.map((t) => t.trace_id) : traces.flatMap((t) => t.spans.map((s) => `${t.trace_id}/${s.span_id}`))).sort();

/** Rows as comparable text, in a fixed order (bigints written out). */
const rowSet = (rows: Record<string, unknown>[]) => rows.map((row) => JSON.stringify(row, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))).sort();

/**
 * An hour of one organization in three raw objects per dataset: a large batch (300 traces × 4 spans, so its group
 * lands hash-ordered), resends of some of its traces (duplicates), and newer versions of others with fewer spans
 * (received later: they win, and the older copies' extra spans stay).
 */
async function landHour(bucket: MemoryBucket): Promise<AcceptedTrace[]> {
  const traces = Array.from({ length: 300 }, () => acceptedTrace({}, 4));
  await landRecords({ store: bucket }, traces.map((t, i) => inlineRecord(i + 1, t, traceContext({ request_id: 'req-1' }))));
  await landRecords({ store: bucket }, traces.slice(0, 20).map((t, i) => inlineRecord(400 + i, t, traceContext({ request_id: 'req-2' }))));
  const later = traceContext({ request_id: 'req-3', received_at: '2026-11-22T10:30:00.000000Z' });
  await landRecords({ store: bucket }, traces.slice(20, 30).map((t, i) => inlineRecord(500 + i, { ...t, spans: t.spans.slice(0, 2) }, later)));
  return traces;
}

const rawBytes = (bucket: MemoryBucket) => [...bucket.objects.entries()].filter(([key]) => /^(traces|spans)\//.test(key)).reduce((sum, [, o]) => sum + o.body.byteLength, 0);

/** A queue that keeps what it was sent, and which plan objects existed when each batch was sent. */
class SentMessages {
  readonly sent: SliceMessage[] = [];
  readonly plansAtSend: string[][] = [];
  constructor(private readonly bucket?: MemoryBucket) {}
  async send(messages: readonly SliceMessage[]): Promise<void> {
    this.plansAtSend.push(this.bucket?.keys('compacted/plans/') ?? []);
    this.sent.push(...messages);
  }
  get parsed(): CompactionMessage[] {
    return this.sent.map((m) => parseCompactionMessage(m.body));
  }
}

const plannerDeps = (bucket: MemoryBucket, queue: SentMessages, partWorkerBytes: number, now = NOW) => ({ store: bucket, queue, now: () => now, partWorkerBytes });

/** The deployed worker over the bucket; `retried` records the retry delays it asked for. */
function worker(bucket: MemoryBucket) {
  const retried: { receiptHandle: string; seconds: number }[] = [];
  const handler = composeWorker({ store: bucket, retries: { retryAfter: async (receiptHandle, seconds) => void retried.push({ receiptHandle, seconds }), sendAgain: async () => undefined }, ...quietTelemetry() });
  const deliver = async (message: SliceMessage, messageId = 'm1', receiveCount = 1) =>
    handler({ Records: [{ messageId, body: message.body, receiptHandle: `rh-${messageId}`, attributes: { ApproximateReceiveCount: String(receiveCount) } } as unknown as SQSRecord] } as SQSEvent);
  return { deliver, retried };
}

/** Lands the hour and plans it with a limit that splits it across 4 part workers. */
async function plannedHour(): Promise<{ bucket: MemoryBucket; traces: AcceptedTrace[]; queue: SentMessages; bytes: number }> {
  const bucket = new MemoryBucket();
  const traces = await landHour(bucket);
  const bytes = Math.ceil(rawBytes(bucket) / 3);
  const queue = new SentMessages(bucket);
  await planCompaction(plannerDeps(bucket, queue, bytes));
  return { bucket, traces, queue, bytes };
}

const partsOf = (queue: SentMessages) => queue.sent.filter((_, i) => queue.parsed[i]!.kind === 'part');
const switchOf = (queue: SentMessages) => queue.sent.find((_, i) => queue.parsed[i]!.kind === 'switch')!;

describe('part workers: one slice compacted by several workers', () => {
  it('gives an hour one worker up to the limit, then the power of two that keeps each worker within it, at most 128', () => {
    expect(partWorkersFor(0, 100)).toBe(1);
    expect(partWorkersFor(100, 100)).toBe(1);
    expect(partWorkersFor(101, 100)).toBe(2);
    expect(partWorkersFor(300, 100)).toBe(4);
    expect(partWorkersFor(401, 100)).toBe(8);
    expect(partWorkersFor(1_000_000, 100)).toBe(128);
    // The one organization at 1,000 traces/s: ~2.2 GB of raw objects an hour, 8 workers (bench/cost-model.ts).
    expect(partWorkersFor(2.2e9)).toBe(8);
  });

  it('plans a slice within the limit as one message, and a larger one as a plan written first, a message per range and a switch in the slice group', async () => {
    const bucket = new MemoryBucket();
    await landHour(bucket);
    const whole = new SentMessages(bucket);
    const one = await planCompaction(plannerDeps(bucket, whole, rawBytes(bucket)));
    expect(one.split).toBe(0);
    expect(whole.parsed).toEqual([{ kind: 'slice', slice: SLICE }]);
    expect(bucket.keys('compacted/')).toEqual([]);

    const split = new SentMessages(bucket);
    const plan = await planCompaction(plannerDeps(bucket, split, Math.ceil(rawBytes(bucket) / 3)));

    expect(plan.split).toBe(1);
    const [ref] = split.parsed.filter((m) => m.kind === 'switch').map((m) => m.plan);
    expect(ref).toEqual({ generation: 1, id: expect.stringMatching(/^[0-9a-f]{16}$/), parts: 4 });
    expect(split.parsed.map((m) => m.kind)).toEqual(['part', 'part', 'part', 'part', 'switch']);
    expect(split.parsed.flatMap((m) => (m.kind === 'part' ? [m.part] : []))).toEqual([0, 1, 2, 3]);
    expect(split.sent.map((m) => m.groupId)).toEqual([0, 1, 2, 3].map((w) => `org-a/2026-11-22/10#part-${w}-of-4`).concat(sliceGroupId(SLICE)));
    expect(new Set(split.sent.map((m) => m.deduplicationId)).size).toBe(5);
    // The plan object exists before any message that names it is sent.
    expect(split.plansAtSend).toEqual([[partPlanKey(SLICE, 1, ref!.id)]]);
  });

  it('leaves every trace and span once after the parts and the switch: the rows one worker would leave, in one object per part and dataset named by one manifest', async () => {
    const { bucket, traces, queue } = await plannedHour();
    const alone = bucket.copy();
    await compactSlice({ store: alone, now: () => NOW }, SLICE);
    const { deliver } = worker(bucket);

    for (const [i, message] of partsOf(queue).entries()) expect(await deliver(message, `p${i}`)).toEqual({ batchItemFailures: [] });
    expect(bucket.objects.has(manifestKey(SLICE))).toBe(false);
    expect(await deliver(switchOf(queue), 's')).toEqual({ batchItemFailures: [] });

    const manifest = manifestOf(bucket);
    const { id } = (queue.parsed.at(-1) as Extract<CompactionMessage, { kind: 'switch' }>).plan;
    expect(manifest.generation).toBe(1);
    for (const dataset of ['traces', 'spans'] as const) {
      expect(manifest[dataset].files).toEqual([0, 1, 2, 3].map((w) => partObjectKey(dataset, SLICE, 1, id, w, 4)));
      expect(manifest[dataset].covered.map((c) => c.key)).toEqual(bucket.keys(`${dataset}/`));
      const rows = await visible(bucket, dataset);
      expect(ids(rows, dataset)).toEqual(expectedIds(traces, dataset));
      expect(rowSet(rows)).toEqual(rowSet(await visible(alone, dataset)));
      expect(manifest[dataset].rows).toBe(rows.length);
      // Every part holds rows: the hash spreads the hour's traces over the four ranges.
      for (const key of manifest[dataset].files) expect((await rowsOf(bucket, key)).length).toBeGreaterThan(0);
    }
    // The switch deleted its plan along with everything no manifest names.
    expect(bucket.keys('compacted/plans/')).toEqual([]);
  });

  it('drops the hour index of the generation before ahead of the switch (it writes none), so a switch killed at any point leaves no stale index', async () => {
    const { bucket, queue } = await plannedHour();
    const stale = indexKey(SLICE, 'traces');
    await bucket.put(stale, Buffer.from('{"keys":[]}\n'));
    const { deliver } = worker(bucket);
    for (const [i, message] of partsOf(queue).entries()) await deliver(message, `p${i}`);
    bucket.failWrite = (key) => key === manifestKey(SLICE);
    expect((await deliver(switchOf(queue), 's')).batchItemFailures).toHaveLength(1);
    expect(bucket.keys('erasures/index/')).toEqual([]);
    bucket.failWrite = () => false;
    await bucket.put(stale, Buffer.from('{"keys":[]}\n'));
    expect(await deliver(switchOf(queue), 's2')).toEqual({ batchItemFailures: [] });
    expect(bucket.objects.has(manifestKey(SLICE))).toBe(true);
    expect(bucket.keys('erasures/index/')).toEqual([]);
  });

  it('switches nothing for an hour whose first retention step ran after its parts: the step deletes its part plan, so no manifest names the deleted raw objects', async () => {
    const { bucket, queue } = await plannedHour();
    const { deliver } = worker(bucket);
    for (const [i, message] of partsOf(queue).entries()) await deliver(message, `p${i}`);
    await expireHour(bucket, { slice: SLICE, deleteCompacted: false });
    expect(bucket.keys('compacted/plans/')).toEqual([]);
    expect(await deliver(switchOf(queue), 's')).toEqual({ batchItemFailures: [] });
    expect(bucket.objects.has(manifestKey(SLICE))).toBe(false);
  });

  it('writes no manifest when the switch arrives before its parts, leaves it on the queue with the retry delay, and switches once the parts exist', async () => {
    const { bucket, traces, queue } = await plannedHour();
    const { deliver, retried } = worker(bucket);
    const parts = partsOf(queue);

    expect(await deliver(switchOf(queue), 's', 1)).toEqual({ batchItemFailures: [{ itemIdentifier: 's' }] });
    expect(retried).toEqual([{ receiptHandle: 'rh-s', seconds: 5 * 60 }]);
    expect(bucket.objects.has(manifestKey(SLICE))).toBe(false);
    // Waiting, not failed: it does not count towards CompactionSlicesFailed.
    const outcome = await compactQueuedSlices({ store: bucket, now: () => NOW }, [{ messageId: 's', body: switchOf(queue).body }]);
    expect(outcome).toMatchObject({ failedMessageIds: ['s'], failed: [], waiting: [{ messageId: 's', slice: 'org-a/2026-11-22/10', error: expect.stringMatching(/^8 of the part objects/) }] });

    for (const [i, message] of parts.slice(0, 3).entries()) await deliver(message, `p${i}`);
    expect(await deliver(switchOf(queue), 's', 2)).toEqual({ batchItemFailures: [{ itemIdentifier: 's' }] });
    expect(retried.at(-1)).toEqual({ receiptHandle: 'rh-s', seconds: 10 * 60 });
    expect(bucket.objects.has(manifestKey(SLICE))).toBe(false);
    expect(ids(await visible(bucket, 'spans'), 'spans')).toEqual(expect.arrayContaining(expectedIds(traces, 'spans')));

    await deliver(parts[3]!, 'p3');
    expect(await deliver(switchOf(queue), 's', 3)).toEqual({ batchItemFailures: [] });
    expect(manifestOf(bucket).generation).toBe(1);
    for (const dataset of ['traces', 'spans'] as const) expect(ids(await visible(bucket, dataset), dataset)).toEqual(expectedIds(traces, dataset));
  });

  it('writes nothing for a redelivered part, and reruns a part killed at any write to the same bytes', async () => {
    const { bucket, queue } = await plannedHour();
    const [first] = queue.parsed.filter((m): m is Extract<CompactionMessage, { kind: 'part' }> => m.kind === 'part');
    const deps = { store: bucket, now: () => NOW };
    const probe = bucket.copy();
    const writes: string[] = [];
    probe.failWrite = (key, operation) => (writes.push(`${operation} ${key}`), false);
    expect((await compactPart({ store: probe, now: () => NOW }, SLICE, first!.plan, first!.part)).outcome).toBe('written');
    const expected = probe.keys('compacted/traces/').concat(probe.keys('compacted/spans/')).map((key) => [key, probe.objects.get(key)!.etag]);
    expect(writes.length).toBeGreaterThanOrEqual(2);

    for (const killedAt of writes.keys()) {
      const run = bucket.copy();
      let n = 0;
      run.failWrite = () => n++ === killedAt;
      await expect(compactPart({ store: run, now: () => NOW }, SLICE, first!.plan, first!.part)).rejects.toThrow('injected failure');
      run.failWrite = () => false;
      await compactPart({ store: run, now: () => NOW }, SLICE, first!.plan, first!.part);
      expect(run.keys('compacted/traces/').concat(run.keys('compacted/spans/')).map((key) => [key, run.objects.get(key)!.etag])).toEqual(expected);
      expect(run.keys('manifests/')).toEqual([]);
    }

    await compactPart(deps, SLICE, first!.plan, first!.part);
    const again = bucket.copy();
    again.failWrite = (key, operation) => {
      throw new Error(`a redelivered part wrote: ${operation} ${key}`);
    };
    expect(await compactPart({ store: again, now: () => NOW }, SLICE, first!.plan, first!.part)).toMatchObject({ outcome: 'already-written', objectsWritten: 0 });
  });

  it('reads each input once per part worker past the byte budget, keeping what its range needs across its hash parts, and writes the rows one worker would', async () => {
    const { bucket, traces, queue } = await plannedHour();
    const alone = bucket.copy();
    const rereads = bucket.copy();
    await compactSlice({ store: alone, now: () => NOW }, SLICE);
    // Inputs past the held budget and hash parts of 40 rows: each worker cuts its range into several parts.
    const small = { store: bucket, now: () => NOW, bytesPerPart: 1024, rowsPerPart: 40 };
    const inputs = bucket.keys('traces/').length + bucket.keys('spans/').length;
    const parts = queue.parsed.filter((m): m is Extract<CompactionMessage, { kind: 'part' }> => m.kind === 'part');
    let workersWithRows = 0;
    for (const message of parts) {
      const before = bucket.gets;
      const written = await compactPart(small, SLICE, message.plan, message.part);
      expect(bucket.gets - before).toBe(inputs);
      workersWithRows += written.rowsRead > 0 ? 1 : 0;
    }
    expect(workersWithRows).toBe(4);
    // Without the budget every hash part reads every input again.
    await compactPart({ ...small, store: rereads, retainedInputBytes: 0 }, SLICE, parts[0]!.plan, 0);
    expect(rereads.gets).toBeGreaterThan(3 * inputs);

    await switchParts({ store: bucket, now: () => NOW }, SLICE, parts[0]!.plan);
    for (const dataset of ['traces', 'spans'] as const) {
      const rows = await visible(bucket, dataset);
      expect(ids(rows, dataset)).toEqual(expectedIds(traces, dataset));
      expect(rowSet(rows)).toEqual(rowSet(await visible(alone, dataset)));
      expect((await rowsOf(bucket, manifestOf(bucket)[dataset].files[0]!)).length).toBeGreaterThan(0);
    }
  });

  it('changes nothing when a part or the switch is redelivered after the switch, and plans late data as the next generation', async () => {
    const { bucket, traces, queue, bytes } = await plannedHour();
    const { deliver } = worker(bucket);
    for (const [i, message] of partsOf(queue).entries()) await deliver(message, `p${i}`);
    await deliver(switchOf(queue), 's');
    const after = [...bucket.objects.entries()].map(([key, o]) => [key, o.etag]);

    bucket.failWrite = (key, operation) => {
      throw new Error(`a redelivery wrote: ${operation} ${key}`);
    };
    for (const [i, message] of partsOf(queue).entries()) expect(await deliver(message, `p${i}`)).toEqual({ batchItemFailures: [] });
    expect(await deliver(switchOf(queue), 's')).toEqual({ batchItemFailures: [] });
    expect([...bucket.objects.entries()].map(([key, o]) => [key, o.etag])).toEqual(after);
    bucket.failWrite = () => false;

    const late = acceptedTrace({}, 3);
    await landRecords({ store: bucket }, [inlineRecord(900, late, traceContext({ request_id: 'req-9' }))]);
    const next = new SentMessages(bucket);
    await planCompaction(plannerDeps(bucket, next, bytes, new Date(NOW.getTime() + 15 * MINUTE)));
    const ref = (next.parsed.at(-1) as Extract<CompactionMessage, { kind: 'switch' }>).plan;
    expect(ref.generation).toBe(2);
    for (const [i, message] of partsOf(next).entries()) await deliver(message, `q${i}`);
    await deliver(switchOf(next), 's2');
    expect(manifestOf(bucket)).toMatchObject({ generation: 2, superseded: [{ generation: 1 }] });
    for (const dataset of ['traces', 'spans'] as const) expect(ids(await visible(bucket, dataset), dataset)).toEqual(expectedIds([...traces, late], dataset));
  });

  it('sends the same plan again while it can complete (new raw data waits for the next generation), and plans afresh once an input was overwritten; the old switch then gives up', async () => {
    const { bucket, traces, queue, bytes } = await plannedHour();
    const first = (queue.parsed.at(-1) as Extract<CompactionMessage, { kind: 'switch' }>).plan;
    await landRecords({ store: bucket }, [inlineRecord(900, acceptedTrace({}, 1), traceContext({ request_id: 'req-9' }))]);

    const again = new SentMessages(bucket);
    await planCompaction(plannerDeps(bucket, again, bytes, new Date(NOW.getTime() + 15 * MINUTE)));
    expect(again.sent.map((m) => m.deduplicationId)).toEqual(queue.sent.map((m) => m.deduplicationId));
    expect(bucket.keys('compacted/plans/')).toEqual([partPlanKey(SLICE, 1, first.id)]);

    // A retried landing batch rewrites an input of the plan: its parts can no longer read it (If-Match).
    const [input] = bucket.keys('spans/');
    bucket.objects.set(input!, { ...bucket.objects.get(input!)!, etag: '"rewritten"' });
    const fresh = new SentMessages(bucket);
    await planCompaction(plannerDeps(bucket, fresh, bytes, new Date(NOW.getTime() + 30 * MINUTE)));
    const second = (fresh.parsed.at(-1) as Extract<CompactionMessage, { kind: 'switch' }>).plan;
    expect(second.generation).toBe(1);
    expect(second.id).not.toBe(first.id);

    const { deliver } = worker(bucket);
    expect(await deliver(switchOf(queue), 'old')).toEqual({ batchItemFailures: [] });
    expect(bucket.objects.has(manifestKey(SLICE))).toBe(false);
    for (const [i, message] of partsOf(fresh).entries()) expect(await deliver(message, `p${i}`)).toEqual({ batchItemFailures: [] });
    expect(await deliver(switchOf(fresh), 'new')).toEqual({ batchItemFailures: [] });
    expect(manifestOf(bucket).generation).toBe(1);
    expect(ids(await visible(bucket, 'traces'), 'traces')).toEqual(expect.arrayContaining(expectedIds(traces, 'traces')));
    expect(new Set(ids(await visible(bucket, 'traces'), 'traces')).size).toBe(traces.length + 1);
  });

  it('keeps the objects and plan of a generation above the manifest\'s (a plan in progress) when it deletes, and deletes them once the slice has passed it', async () => {
    const bucket = new MemoryBucket();
    const put = (key: string) => bucket.put(key, Buffer.from(key));
    const inProgress = [partObjectKey('spans', SLICE, 3, 'aaaaaaaaaaaaaaaa', 0, 2), partPlanKey(SLICE, 3, 'aaaaaaaaaaaaaaaa')];
    const leftOver = [partObjectKey('spans', SLICE, 2, 'bbbbbbbbbbbbbbbb', 1, 2), partPlanKey(SLICE, 2, 'bbbbbbbbbbbbbbbb'), 'compacted/traces/org_id=org-a/dt=2026-11-22/hour=10/g000001.parquet'];
    for (const key of [...inProgress, ...leftOver]) await put(key);

    expect(await deleteUnreferenced({ store: bucket }, SLICE, [], [], 2)).toBe(3);
    expect(bucket.keys('compacted/')).toEqual([...inProgress].sort());
    expect(await deleteUnreferenced({ store: bucket }, SLICE, [], [], 3)).toBe(2);
    expect(bucket.keys('compacted/')).toEqual([]);
  });

  it('reads part and switch messages back as they were planned, and rejects a part outside its plan or an unknown kind', async () => {
    const { queue } = await plannedHour();
    const [part] = queue.parsed;
    expect(part).toEqual({ kind: 'part', slice: SLICE, plan: { generation: 1, id: expect.stringMatching(/^[0-9a-f]{16}$/), parts: 4 }, part: 0 });
    const body = JSON.parse(queue.sent[0]!.body) as Record<string, unknown>;
    expect(() => parseCompactionMessage(JSON.stringify({ ...body, part: 4 }))).toThrow(InvalidSliceMessageError);
    expect(() => parseCompactionMessage(JSON.stringify({ ...body, plan_id: '../x' }))).toThrow(InvalidSliceMessageError);
    expect(() => parseCompactionMessage(JSON.stringify({ ...body, kind: 'merge' }))).toThrow(InvalidSliceMessageError);
    expect(() => parseCompactionMessage(JSON.stringify({ ...body, generation: 0 }))).toThrow(InvalidSliceMessageError);
    const { kind: _kind, generation: _g, plan_id: _p, parts: _n, part: _w, ...slice } = body;
    expect(parseCompactionMessage(JSON.stringify(slice))).toEqual({ kind: 'slice', slice: SLICE });
  });

  it('over a model of SQS FIFO: the parts run at once in their own groups, the switch waits for them through its retries, and nothing reaches the dead-letter queue', async () => {
    const bucket = new MemoryBucket();
    const traces = await landHour(bucket);
    const queue = new FifoQueueModel({ visibilityTimeoutMs: COMPACTION_VISIBILITY_TIMEOUT.toMilliseconds(), maxReceiveCount: COMPACTION_MAX_RECEIVE_COUNT });
    const bytes = Math.ceil(rawBytes(bucket) / 3);
    const plan = () => planCompaction({ store: bucket, now: () => new Date(NOW.getTime() + queue.now), partWorkerBytes: bytes, queue: { send: async (m) => void queue.send(m) } });
    await plan();
    // Planned again 15 minutes later, before any worker ran: the same plan, sent again (past the deduplication interval).
    queue.now = 15 * MINUTE;
    await plan();
    expect(queue.depth).toBe(10);
    const handler = composeWorker({ store: bucket, retries: queue.workerRetries, ...quietTelemetry() });
    let running = 0;
    let peak = 0;
    const writing = new Map<string, number>();
    let peakPerRange = 0;
    const invoke: WorkerInvocation = async (records) => {
      const message = parseCompactionMessage(records[0]!.body);
      const range = message.kind === 'part' ? `part ${message.part}` : message.kind;
      writing.set(range, (writing.get(range) ?? 0) + 1);
      peakPerRange = Math.max(peakPerRange, writing.get(range)!);
      peak = Math.max(peak, ++running);
      try {
        return await handler({ Records: records as unknown as SQSRecord[] } as SQSEvent);
      } finally {
        running--;
        writing.set(range, writing.get(range)! - 1);
      }
    };

    const events = await drainWithEventSource(queue, invoke, 10);

    expect(peak).toBe(5);
    expect(peakPerRange).toBe(1);
    expect(events.filter((e) => e.startsWith('fail')).length).toBeGreaterThan(0);
    expect(queue.deadLetters).toEqual([]);
    expect(queue.depth).toBe(0);
    expect(manifestOf(bucket).generation).toBe(1);
    for (const dataset of ['traces', 'spans'] as const) expect(ids(await visible(bucket, dataset), dataset)).toEqual(expectedIds(traces, dataset));
  });
});

describe('a switch waiting for its parts, over a model of SQS FIFO', () => {
  const HOUR = 60 * MINUTE;

  /** The hour planned onto the model with its parts held back (queued behind other hours, say) until `releaseAt`. */
  async function heldParts(releaseAt: number) {
    const bucket = new MemoryBucket();
    const traces = await landHour(bucket);
    const queue = new FifoQueueModel({ visibilityTimeoutMs: COMPACTION_VISIBILITY_TIMEOUT.toMilliseconds(), maxReceiveCount: COMPACTION_MAX_RECEIVE_COUNT });
    const held: SliceMessage[] = [];
    const isPart = (m: SliceMessage) => parseCompactionMessage(m.body).kind === 'part';
    const clock = () => new Date(NOW.getTime() + queue.now);
    await planCompaction({ store: bucket, now: clock, partWorkerBytes: Math.ceil(rawBytes(bucket) / 3), queue: { send: async (m) => void (held.push(...m.filter(isPart)), queue.send(m.filter((x) => !isPart(x)))) } });
    expect(held.length).toBeGreaterThan(1);
    const handler = composeWorker({ store: bucket, retries: queue.workerRetries, now: clock, ...quietTelemetry() });
    let switchReceives = 0;
    const invoke: WorkerInvocation = async (records) => {
      if (held.length > 0 && queue.now >= releaseAt) queue.send(held.splice(0));
      if (parseCompactionMessage(records[0]!.body).kind === 'switch') switchReceives++;
      return handler({ Records: records as unknown as SQSRecord[] } as SQSEvent);
    };
    const events = await drainWithEventSource(queue, invoke, 10);
    return { bucket, traces, queue, events, switchReceives: () => switchReceives };
  }

  it('is sent again before its receives run out, never dead-lettered, and switches once its parts are written 3 hours later', async () => {
    const { bucket, traces, queue, switchReceives } = await heldParts(3 * HOUR);

    expect(switchReceives()).toBeGreaterThan(2 * COMPACTION_MAX_RECEIVE_COUNT);
    expect(queue.deadLetters).toEqual([]);
    expect(queue.depth).toBe(0);
    expect(manifestOf(bucket).generation).toBe(1);
    for (const dataset of ['traces', 'spans'] as const) expect(ids(await visible(bucket, dataset), dataset)).toEqual(expectedIds(traces, dataset));
  });

  it('goes to the dead-letter queue once its parts cannot come any more (planned longer ago than the wait limit)', async () => {
    const { queue } = await heldParts(Number.POSITIVE_INFINITY);

    expect(queue.deadLetters.map((m) => parseCompactionMessage(m.body).kind)).toEqual(['switch']);
    expect(queue.now).toBeGreaterThan(SWITCH_WAIT_LIMIT_MS);
  });
});

describe('switchParts', () => {
  it('switches nothing for a plan made from another generation than the manifest\'s', async () => {
    const { bucket, queue } = await plannedHour();
    const ref = (queue.parsed.at(-1) as Extract<CompactionMessage, { kind: 'switch' }>).plan;
    const planObject = bucket.objects.get(partPlanKey(SLICE, 1, ref.id))!;
    await compactSlice({ store: bucket, now: () => NOW }, SLICE);
    // A planner run that read the manifest before that compaction writes its plan after it.
    bucket.objects.set(partPlanKey(SLICE, 1, ref.id), planObject);
    const before = manifestOf(bucket);
    expect(await switchParts({ store: bucket, now: () => NOW }, SLICE, ref)).toMatchObject({ outcome: 'up-to-date', generation: 1 });
    expect(manifestOf(bucket)).toEqual(before);
    expect((await compactPart({ store: bucket, now: () => NOW }, SLICE, ref, 0)).outcome).toBe('stale');
  });
});
