import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { manifestKey } from '../../../lambda/lake/keys/compacted-keys.js';
import { composeWorker } from '../../../lambda/compaction/compose.js';
import { retryDelaySeconds } from '../../../lambda/compaction/create-worker-handler.js';
import { COMPACTION_QUEUE_VISIBILITY_SECONDS } from '../../../lambda/shared/service-constants.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import { quietTelemetry } from '../../../devkit/fakes/quiet-telemetry.js';
import { acceptedTrace, inlineRecord, traceContext } from '../../../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';

const slice = (orgId: string) => ({ orgId, dt: '2026-11-22', hour: '10' });
const body = (orgId: string) => JSON.stringify({ v: 1, org_id: orgId, dt: '2026-11-22', hour: '10', reason: 'new', planned_at: '2026-11-23T12:00:00.000Z' });
const event = (...records: { messageId: string; body: string; receiveCount?: number }[]): SQSEvent => ({
  Records: records.map(({ receiveCount = 1, ...record }) => ({ ...record, receiptHandle: `rh-${record.messageId}`, attributes: { ApproximateReceiveCount: String(receiveCount) } }) as SQSRecord),
});

async function bucketWith(...orgs: string[]): Promise<MemoryBucket> {
  const bucket = new MemoryBucket();
  for (const [i, org] of orgs.entries()) await landRecords({ store: bucket }, [inlineRecord(i + 1, acceptedTrace({}, 2), traceContext({ org_id: org }))]);
  return bucket;
}

describe('the compaction worker', () => {
  it('compacts the slice a message names and reports no failure, so the message is deleted', async () => {
    const bucket = await bucketWith('org-a', 'org-b');
    const handler = composeWorker({ store: bucket, ...quietTelemetry() });

    expect(await handler(event({ messageId: 'm1', body: body('org-a') }))).toEqual({ batchItemFailures: [] });

    expect(bucket.keys('manifests/')).toEqual([manifestKey(slice('org-a'))]);
    expect(bucket.keys('compacted/traces/')).toHaveLength(1);
    // A message for a slice compacted meanwhile (a re-plan) finds nothing to do and succeeds too.
    const writes = bucket.keys().length;
    expect(await handler(event({ messageId: 'm2', body: body('org-a') }))).toEqual({ batchItemFailures: [] });
    expect(bucket.keys()).toHaveLength(writes);
  });

  it('reports a slice whose compaction fails as a batch item failure, leaving it readable on its raw objects', async () => {
    const bucket = await bucketWith('org-a');
    bucket.objects.set(manifestKey(slice('org-a')), { body: Buffer.from('not json'), etag: '"x"' });
    const handler = composeWorker({ store: bucket, ...quietTelemetry() });

    expect(await handler(event({ messageId: 'm1', body: body('org-a') }))).toEqual({ batchItemFailures: [{ itemIdentifier: 'm1' }] });
    expect(bucket.keys('compacted/')).toEqual([]);
    expect(bucket.keys('traces/')).toHaveLength(1);
  });

  it('reports a message that names no slice as failed, so that it ends in the dead-letter queue', async () => {
    const handler = composeWorker({ store: new MemoryBucket(), ...quietTelemetry() });
    expect(await handler(event({ messageId: 'm1', body: '{"hello":"world"}' }))).toEqual({ batchItemFailures: [{ itemIdentifier: 'm1' }] });
  });

  it('stops at the first failure of a batch and reports the rest as failed untried, as SQS FIFO requires', async () => {
    const bucket = await bucketWith('org-a', 'org-b', 'org-c');
    bucket.objects.set(manifestKey(slice('org-b')), { body: Buffer.from('not json'), etag: '"x"' });
    const handler = composeWorker({ store: bucket, ...quietTelemetry() });

    const response = await handler(event({ messageId: 'm1', body: body('org-a') }, { messageId: 'm2', body: body('org-b') }, { messageId: 'm3', body: body('org-c') }));

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm2' }, { itemIdentifier: 'm3' }] });
    expect(bucket.keys('manifests/')).toEqual([manifestKey(slice('org-a')), manifestKey(slice('org-b'))]);
  });

  it('brings a failed slice back after 5, 10, 20, 40, 80 minutes by its receive count, never later than the visibility timeout', async () => {
    const bucket = await bucketWith('org-a');
    bucket.objects.set(manifestKey(slice('org-a')), { body: Buffer.from('not json'), etag: '"x"' });
    const delays: [string, number][] = [];
    const handler = composeWorker({ store: bucket, retries: { retryAfter: async (handle, seconds) => void delays.push([handle, seconds]), sendAgain: async () => undefined }, ...quietTelemetry() });

    for (const receiveCount of [1, 3, 5]) await handler(event({ messageId: 'm1', body: body('org-a'), receiveCount }));

    expect(delays).toEqual([['rh-m1', 300], ['rh-m1', 1200], ['rh-m1', 4800]]);
    expect([1, 2, 3, 4, 5, 6, 9].map((count) => retryDelaySeconds(count, COMPACTION_QUEUE_VISIBILITY_SECONDS))).toEqual([300, 600, 1200, 2400, 4800, 5400, 5400]);
  });

  it('still reports the failure when the retry delay cannot be shortened, and leaves successes alone', async () => {
    const bucket = await bucketWith('org-a', 'org-b');
    bucket.objects.set(manifestKey(slice('org-b')), { body: Buffer.from('not json'), etag: '"x"' });
    const handles: string[] = [];
    const retries = { retryAfter: async (handle: string) => (handles.push(handle), Promise.reject(new Error('AccessDenied'))), sendAgain: async () => undefined };
    const handler = composeWorker({ store: bucket, retries, ...quietTelemetry() });

    expect(await handler(event({ messageId: 'm1', body: body('org-a') }))).toEqual({ batchItemFailures: [] });
    expect(await handler(event({ messageId: 'm2', body: body('org-b') }))).toEqual({ batchItemFailures: [{ itemIdentifier: 'm2' }] });
    expect(handles).toEqual(['rh-m2']);
  });
});
