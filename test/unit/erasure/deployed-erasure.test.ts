import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { composePlanner, composeWorker } from '../../../lambda/compaction/compose.js';
import { newRequest } from '../../../lambda/erasure/erasure-record.js';
import { type ErasureSecret, StoredErasures, erasureStatus } from '../../../lambda/erasure/stored-erasures.js';
import { type SliceMessage, sliceGroupId } from '../../../lambda/compaction/slice-message.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import { acceptedTrace, inlineRecord, traceContext } from '../../../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';
import { quietTelemetry } from '../../../devkit/fakes/quiet-telemetry.js';

const SECRET: ErasureSecret = { get: async () => Buffer.alloc(32, 3) };

/** The compaction queue as the planner's tests model it: what was sent, delivered to the worker in order. */
class SentMessages {
  readonly sent: SliceMessage[] = [];
  async send(messages: readonly SliceMessage[]): Promise<void> {
    this.sent.push(...messages);
  }
  drain(): SQSEvent {
    const records = this.sent.splice(0).map((message, i) => ({ messageId: `m${i}`, body: message.body, receiptHandle: `rh${i}`, attributes: { ApproximateReceiveCount: '1' } }) as unknown as SQSRecord);
    return { Records: records };
  }
}

describe('erasure deployed: the planner on its schedule, the workers on the queue', () => {
  it('is done at the second planner run after the request, its hours sent in their slices\' message groups', async () => {
    const bucket = new MemoryBucket();
    const queue = new SentMessages();
    const planner = composePlanner({ store: bucket, queue, erasureSecret: SECRET, ...quietTelemetry() });
    const worker = composeWorker({ store: bucket, erasureSecret: SECRET, ...quietTelemetry() });
    const at = (hour: string) => `2026-11-22T${hour}:05:00.000001Z`;
    await landRecords({ store: bucket }, [
      inlineRecord(1, acceptedTrace({ user_id: 'alice', timestamp: at('09') }, 1)),
      inlineRecord(2, acceptedTrace({ user_id: 'bob', timestamp: at('09') }, 1)),
      inlineRecord(3, acceptedTrace({ user_id: 'bob', timestamp: at('10') }, 1), traceContext({ request_id: 'req-2' })),
    ]);
    await planner();
    expect((await worker(queue.drain())).batchItemFailures).toEqual([]);

    const erasures = new StoredErasures(bucket, SECRET);
    const request = newRequest('org-a', { user_ids: ['alice'], session_ids: [], trace_ids: [] }, new Date('2026-11-23T12:00:00Z'));
    await erasures.put(request);

    const first = await planner();
    expect(first.planned.erasure).toBe(1);
    expect(queue.sent.map((message) => message.groupId)).toEqual([sliceGroupId({ orgId: 'org-a', dt: '2026-11-22', hour: '09' })]);
    expect((await erasureStatus(erasures, (await erasures.request('org-a', request.erasure_id))!)).status).toBe('running');
    expect((await worker(queue.drain())).batchItemFailures).toEqual([]);

    const second = await planner();
    expect(second.planned.erasure).toBe(0);
    const status = await erasureStatus(erasures, (await erasures.request('org-a', request.erasure_id))!);
    expect(status).toMatchObject({ status: 'done', hours_found: 1, hours_done: 1, rows_removed: 2, selector: null });
  });
});
