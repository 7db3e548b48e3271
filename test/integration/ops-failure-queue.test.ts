import { type ChildProcess, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { CreateQueueCommand, GetQueueAttributesCommand, ListQueuesCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { freePort } from '../../devkit/engines/engines.js';
import { listFailures, purgeQueue, replayFailures } from '../../scripts/ops/failure-queue.js';

// `npm run ops -- failures replay` and `queue purge` against moto's SQS server (real queue semantics:
// visibility timeouts, receipt handles, purge), the way the runbook for FailureQueueNotEmpty uses them.

let moto: ChildProcess;
let sqs: SQSClient;

beforeAll(async () => {
  const port = await freePort();
  moto = spawn('python3', ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  sqs = new SQSClient({ endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await sqs.send(new ListQueuesCommand({}));
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(250);
    }
  }
}, 40_000);

afterAll(() => {
  sqs?.destroy();
  moto?.kill('SIGTERM');
});

const onFailure = (from: number) =>
  JSON.stringify({
    timestamp: '2026-11-25T10:00:00.000Z',
    KinesisBatchInfo: { shardId: 'shardId-000000000000', startSequenceNumber: String(from), endSequenceNumber: String(from + 9), batchSize: 10, streamArn: 'arn:aws:kinesis:us-east-1:123456789012:stream/traces' },
  });

async function visible(queueUrl: string): Promise<number> {
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }));
  return Number(Attributes?.ApproximateNumberOfMessages);
}

it('replays every range once, deletes what landed again, leaves the failures visible, and purge empties the queue', async () => {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: `failures-${Date.now()}` }));
  const queueUrl = QueueUrl as string;
  const bodies = [...Array.from({ length: 12 }, (_, i) => onFailure(100 * (i + 1))), 'not an on-failure record'];
  for (let i = 0; i < bodies.length; i += 10) {
    await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: bodies.slice(i, i + 10).map((MessageBody, j) => ({ Id: String(i + j), MessageBody })) }));
  }
  const failing = new Set(['300', '700']);
  const replayed: string[] = [];
  const replay = async (range: { startSequenceNumber: string }) => {
    replayed.push(range.startSequenceNumber);
    if (failing.has(range.startSequenceNumber)) throw new Error('AccessDenied');
    return { records: 10 };
  };

  const outcomes = await replayFailures({ sqs, queueUrl, replay }, { dryRun: false });

  expect(outcomes.filter((o) => o.outcome === 'replayed')).toHaveLength(10);
  expect(outcomes.filter((o) => o.outcome === 'failed').map((o) => o.range?.startSequenceNumber).sort()).toEqual(['300', '700']);
  expect(outcomes.filter((o) => o.outcome === 'skipped')).toHaveLength(1);
  expect([...replayed].sort()).toEqual([...new Set(replayed)].sort()); // no range twice
  expect(replayed).toHaveLength(12);
  expect(await visible(queueUrl)).toBe(3);
  expect((await listFailures(sqs, queueUrl)).map((f) => f.range?.startSequenceNumber ?? 'none').sort()).toEqual(['300', '700', 'none']);

  await purgeQueue(sqs, queueUrl);
  expect(await visible(queueUrl)).toBe(0);
}, 60_000);
