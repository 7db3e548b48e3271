import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { compactPending } from '../../../lambda/compaction/compact-pending.js';
import { composeWorker } from '../../../lambda/compaction/compose.js';
import { planCompaction } from '../../../lambda/compaction/plan-compaction.js';
import { parseSliceMessage } from '../../../lambda/compaction/slice-message.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import { composeRetentionSweeper } from '../../../lambda/retention/compose.js';
import { listedRetentionBucket } from '../../../lambda/retention/listed-retention-bucket.js';
import { COMPACTION_MAX_RECEIVE_COUNT, COMPACTION_VISIBILITY_TIMEOUT } from '../../../lib/constructs/compaction.js';
import { FifoQueueModel, type WorkerInvocation, drainWithEventSource } from '../../../devkit/fakes/fifo-queue-model.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';
import { quietTelemetry } from '../../../devkit/fakes/quiet-telemetry.js';
import { acceptedSpan, acceptedTrace, inlineRecord, traceContext } from '../../../devkit/builders/landing-builders.js';
import { visible } from '../compaction/bucket-views.js';

const NOW = new Date('2026-11-28T12:00:00.000Z');
const AT = '2026-11-20T07:10:00.000000Z';

describe('an hour\'s deletion and its compaction on the compaction queue (a model of SQS FIFO)', () => {
  it('never run at once: the expire message and a compaction of late data share the hour\'s message group', async () => {
    const bucket = new MemoryBucket();
    const trace = (n: number) => inlineRecord(n, acceptedTrace({ timestamp: AT, spans: [acceptedSpan({ timestamp: AT })] }), traceContext({ org_id: 'acme' }));
    await landRecords({ store: bucket }, [trace(1)]);
    await compactPending({ store: bucket, now: () => NOW });
    // Late data of the old hour: the compaction planner plans it, the sweep plans the hour's deletion.
    await landRecords({ store: bucket }, [trace(2)]);
    const queue = new FifoQueueModel({ visibilityTimeoutMs: COMPACTION_VISIBILITY_TIMEOUT.toMilliseconds(), maxReceiveCount: COMPACTION_MAX_RECEIVE_COUNT });
    const send = { send: async (messages: Parameters<FifoQueueModel['send']>[0]) => void queue.send(messages) };
    await planCompaction({ store: bucket, now: () => NOW, queue: send });
    await composeRetentionSweeper({
      bucket: listedRetentionBucket(bucket),
      tenancy: {
        listOrganizations: async () => [{ orgId: 'acme', plan: 'team', overrides: {}, retentionDays: 3, planStatus: 'active', billingStatus: 'ok', createdAt: '', updatedAt: '' }],
        listPlans: async () => [],
      },
      queue: send,
      now: () => NOW,
      ...quietTelemetry('retention'),
    })();
    expect(queue.depth).toBe(2);

    const handler = composeWorker({ store: bucket, ...quietTelemetry() });
    const active = new Map<string, number>();
    let peak = 0;
    const invoke: WorkerInvocation = async (records) => {
      const slice = JSON.stringify(parseSliceMessage(records[0]!.body));
      active.set(slice, (active.get(slice) ?? 0) + 1);
      peak = Math.max(peak, active.get(slice)!);
      try {
        // A reader between every step: it must always read (no manifest naming a missing object).
        await visible(bucket, 'traces');
        return await handler({ Records: records as unknown as SQSRecord[] } as SQSEvent);
      } finally {
        active.set(slice, active.get(slice)! - 1);
        await visible(bucket, 'traces');
      }
    };
    const events = await drainWithEventSource(queue, invoke, 10);

    expect(peak).toBe(1);
    expect(events.filter((event) => event.startsWith('fail'))).toEqual([]);
    // The compaction ran first (sent first in the group) and the deletion after it: nothing of the hour is left
    // to read but its compacted objects, which no manifest names and the next run clears.
    expect(bucket.keys('manifests/')).toEqual([]);
    expect(bucket.keys('traces/')).toEqual([]);
    expect(await visible(bucket, 'traces')).toEqual([]);
  });
});
