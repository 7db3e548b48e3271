import { ChangeMessageVisibilityCommand, DeleteMessageCommand, PurgeQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { listFailures, purgeQueue, replayFailures } from '../../../scripts/ops/failure-queue.js';

const sqs = mockClient(SQSClient);
const QUEUE = 'https://sqs.eu-west-1.amazonaws.com/123/failures';

/** The message a Kinesis event source mapping sends its on-failure destination. */
const onFailure = (id: string, from: string, to: string) => ({
  MessageId: id,
  ReceiptHandle: `rh-${id}`,
  Body: JSON.stringify({
    timestamp: '2026-11-25T10:00:00.000Z',
    KinesisBatchInfo: { shardId: 'shardId-000000000001', startSequenceNumber: from, endSequenceNumber: to, batchSize: 3, streamArn: 'arn:aws:kinesis:eu-west-1:123:stream/TraceIngest-Stream' },
  }),
});

beforeEach(() => sqs.reset());

describe('failures list', () => {
  it('reads the queue without taking messages off it, until rounds bring nothing new', async () => {
    sqs.on(ReceiveMessageCommand).resolvesOnce({ Messages: [onFailure('a', '10', '12')] }).resolves({ Messages: [onFailure('a', '10', '12')] });
    const listed = await listFailures(new SQSClient({}), QUEUE);
    expect(listed).toEqual([
      { message_id: 'a', failed_at: '2026-11-25T10:00:00.000Z', range: { streamName: 'TraceIngest-Stream', shardId: 'shardId-000000000001', startSequenceNumber: '10', endSequenceNumber: '12' } },
    ]);
    expect(sqs).toHaveReceivedCommandWith(ReceiveMessageCommand, { QueueUrl: QUEUE, VisibilityTimeout: 0 });
    expect(sqs).not.toHaveReceivedCommand(DeleteMessageCommand);
  });
});

describe('failures replay', () => {
  it('replays each range and deletes its message only once it has landed again; a failed or empty replay stays on the queue', async () => {
    sqs
      .on(ReceiveMessageCommand)
      .resolvesOnce({ Messages: [onFailure('a', '10', '12'), onFailure('b', '20', '22'), onFailure('c', '30', '32'), { MessageId: 'd', ReceiptHandle: 'rh-d', Body: 'hello' }] })
      .resolves({ Messages: [onFailure('b', '20', '22')] });
    const replayed: string[] = [];
    const replay = async (range: { startSequenceNumber: string }) => {
      replayed.push(range.startSequenceNumber);
      if (range.startSequenceNumber === '20') throw new Error('AccessDenied: s3:PutObject');
      return { records: range.startSequenceNumber === '30' ? 0 : 3 };
    };

    const outcomes = await replayFailures({ sqs: new SQSClient({}), queueUrl: QUEUE, replay }, { dryRun: false });

    expect(outcomes.map(({ message_id, outcome, records, problem }) => ({ message_id, outcome, records, problem }))).toEqual([
      { message_id: 'a', outcome: 'replayed', records: 3, problem: undefined },
      { message_id: 'b', outcome: 'failed', records: undefined, problem: 'AccessDenied: s3:PutObject' },
      { message_id: 'c', outcome: 'failed', records: undefined, problem: expect.stringMatching(/^the stream holds no record of this range any more/) },
      { message_id: 'd', outcome: 'skipped', records: undefined, problem: expect.stringMatching(/not valid JSON/) },
    ]);
    expect(replayed).toEqual(['10', '20', '30']);
    expect(sqs).toHaveReceivedCommandTimes(DeleteMessageCommand, 1);
    expect(sqs).toHaveReceivedCommandWith(DeleteMessageCommand, { QueueUrl: QUEUE, ReceiptHandle: 'rh-a' });
    for (const kept of ['rh-b', 'rh-c', 'rh-d']) expect(sqs).toHaveReceivedCommandWith(ChangeMessageVisibilityCommand, { QueueUrl: QUEUE, ReceiptHandle: kept, VisibilityTimeout: 0 });
    expect(sqs).toHaveReceivedCommandWith(ReceiveMessageCommand, { QueueUrl: QUEUE, VisibilityTimeout: 3600 });
  });

  it('with --dry-run replays and deletes nothing', async () => {
    sqs.on(ReceiveMessageCommand).resolves({ Messages: [onFailure('a', '10', '12')] });
    const replay = jest.fn();
    const outcomes = await replayFailures({ sqs: new SQSClient({}), queueUrl: QUEUE, replay }, { dryRun: true });
    expect(outcomes).toEqual([expect.objectContaining({ message_id: 'a', outcome: 'would-replay' })]);
    expect(replay).not.toHaveBeenCalled();
    expect(sqs).not.toHaveReceivedCommand(DeleteMessageCommand);
  });
});

it('queue purge sends PurgeQueue for the queue', async () => {
  sqs.on(PurgeQueueCommand).resolves({});
  await purgeQueue(new SQSClient({}), QUEUE);
  expect(sqs).toHaveReceivedCommandWith(PurgeQueueCommand, { QueueUrl: QUEUE });
});
