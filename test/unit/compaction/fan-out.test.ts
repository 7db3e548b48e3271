import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { manifestKey } from '../../../lambda/lake/keys/compacted-keys.js';
import { composeWorker } from '../../../lambda/compaction/compose.js';
import { parseManifest } from '../../../lambda/lake/manifest.js';
import { planCompaction } from '../../../lambda/compaction/plan-compaction.js';
import { parseSliceMessage } from '../../../lambda/compaction/slice-message.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import { COMPACTION_MAX_RECEIVE_COUNT, COMPACTION_VISIBILITY_TIMEOUT } from '../../../lib/constructs/compaction.js';
import { FifoQueueModel, type WorkerInvocation, drainWithEventSource } from '../../../devkit/fakes/fifo-queue-model.js';
import { quietTelemetry } from '../../../devkit/fakes/quiet-telemetry.js';
import { acceptedTrace, inlineRecord, traceContext } from '../../../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';

const NOW = new Date('2026-11-23T12:00:00Z');
const MINUTE = 60_000;
const SLICE_A = { orgId: 'org-a', dt: '2026-11-22', hour: '10' };

async function land(bucket: MemoryBucket, n: number, org: string): Promise<void> {
  await landRecords({ store: bucket }, [inlineRecord(n, acceptedTrace({}, 2), traceContext({ org_id: org }))]);
}

/** The deployed queue's settings, on the model. */
const deployedQueue = () => new FifoQueueModel({ visibilityTimeoutMs: COMPACTION_VISIBILITY_TIMEOUT.toMilliseconds(), maxReceiveCount: COMPACTION_MAX_RECEIVE_COUNT });

/** The planner sending to the model, at the model's time. */
const plan = (bucket: MemoryBucket, queue: FifoQueueModel, send = (m: Parameters<FifoQueueModel['send']>[0]) => queue.send(m)) =>
  planCompaction({ store: bucket, now: () => NOW, queue: { send: async (messages) => void send(messages) } });

/** The deployed worker on the model, watched: how many invocations run at once, per slice and in all. */
function watchedWorker(bucket: MemoryBucket, queue: FifoQueueModel) {
  const handler = composeWorker({ store: bucket, retries: queue.workerRetries, ...quietTelemetry() });
  const active = new Map<string, number>();
  const peak = { perSlice: 0, total: 0 };
  let running = 0;
  const invoke: WorkerInvocation = async (records) => {
    const slice = JSON.stringify(parseSliceMessage(records[0]!.body));
    active.set(slice, (active.get(slice) ?? 0) + 1);
    running++;
    peak.perSlice = Math.max(peak.perSlice, active.get(slice)!);
    peak.total = Math.max(peak.total, running);
    try {
      return await handler({ Records: records as unknown as SQSRecord[] } as SQSEvent);
    } finally {
      active.set(slice, active.get(slice)! - 1);
      running--;
    }
  };
  return { invoke, peak };
}

describe('compaction fan-out over a model of SQS FIFO', () => {
  it('hands a slice planned twice to one worker at a time: the second message waits until the first is deleted', async () => {
    const bucket = new MemoryBucket();
    await land(bucket, 1, 'org-a');
    await land(bucket, 2, 'org-b');
    const queue = deployedQueue();
    await plan(bucket, queue);
    // The next run, 15 minutes later (past the deduplication interval), after late data for org-a: both slices again.
    queue.now = 15 * MINUTE;
    await land(bucket, 3, 'org-a');
    await plan(bucket, queue);
    expect(queue.depth).toBe(4);
    const worker = watchedWorker(bucket, queue);

    const events = await drainWithEventSource(queue, worker.invoke, 10);

    expect(worker.peak).toEqual({ perSlice: 1, total: 2 });
    expect(events.indexOf('delete m1')).toBeLessThan(events.indexOf('receive m3 org-a/2026-11-22/10'));
    expect(events.filter((e) => e.startsWith('fail'))).toEqual([]);
    const manifest = parseManifest(bucket.objects.get(manifestKey(SLICE_A))!.body, SLICE_A);
    expect(manifest.traces.covered.map((c) => c.key)).toEqual(bucket.keys('traces/org_id=org-a/'));
    expect(queue.depth).toBe(0);
  });

  it('would run two compactions of a slice at once without message groups (the control for the test above)', async () => {
    const bucket = new MemoryBucket();
    await land(bucket, 1, 'org-a');
    const queue = deployedQueue();
    let n = 0;
    const ungrouped = (messages: Parameters<FifoQueueModel['send']>[0]) => queue.send(messages.map((m) => ({ ...m, groupId: `${m.groupId}#${n++}` })));
    await plan(bucket, queue, ungrouped);
    queue.now = 15 * MINUTE;
    await plan(bucket, queue, ungrouped);
    const worker = watchedWorker(bucket, queue);

    await drainWithEventSource(queue, worker.invoke, 10);

    expect(worker.peak.perSlice).toBe(2);
  });

  it('collapses a re-plan of the same pending state within the 5-minute deduplication interval, but not a later one', async () => {
    const bucket = new MemoryBucket();
    await land(bucket, 1, 'org-a');
    const queue = deployedQueue();
    await plan(bucket, queue);
    queue.now = 4 * MINUTE;
    await plan(bucket, queue);
    expect(queue.depth).toBe(1);
    await land(bucket, 2, 'org-a');
    await plan(bucket, queue);
    expect(queue.depth).toBe(2);
    queue.now = 20 * MINUTE;
    await plan(bucket, queue);
    expect(queue.depth).toBe(3);
  });

  it('moves a slice that fails every attempt to the dead-letter queue after the configured receives, while the others are compacted', async () => {
    const bucket = new MemoryBucket();
    await land(bucket, 1, 'org-a');
    await land(bucket, 2, 'org-b');
    bucket.objects.set(manifestKey(SLICE_A), { body: Buffer.from('not json'), etag: '"x"' });
    const queue = deployedQueue();
    await plan(bucket, queue);
    const worker = watchedWorker(bucket, queue);

    const events = await drainWithEventSource(queue, worker.invoke, 10);

    expect(queue.deadLetters.map((m) => parseSliceMessage(m.body))).toEqual([SLICE_A]);
    expect(events.filter((e) => e === 'fail m1')).toHaveLength(COMPACTION_MAX_RECEIVE_COUNT);
    expect(bucket.keys('manifests/')).toEqual([manifestKey(SLICE_A), manifestKey({ ...SLICE_A, orgId: 'org-b' })]);
    // The worker's backoff brings it back after 5, 10, 20, 40 and 80 minutes: in the dead-letter queue 155 minutes
    // after its first failure, instead of 5 × the 90-minute visibility timeout.
    expect(queue.now).toBe(155 * MINUTE);
    expect(queue.depth).toBe(0);
  });
});
