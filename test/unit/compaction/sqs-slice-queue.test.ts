import { ChangeMessageVisibilityCommand, SendMessageCommand, SQSClient, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import type { SliceMessage } from '../../../lambda/compaction/slice-message.js';
import { SliceQueueSendError, SqsSliceQueue } from '../../../lambda/compaction/sqs-slice-queue.js';
import { SqsSliceRetries } from '../../../lambda/compaction/sqs-slice-retries.js';

const QUEUE_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/compaction.fifo';
const message = (i: number): SliceMessage => ({ groupId: `org-${i}/2026-11-22/10`, deduplicationId: `d${i}`, body: `{"i":${i}}` });

describe('SqsSliceQueue', () => {
  const sqs = mockClient(SQSClient);
  beforeEach(() => sqs.reset());
  const queue = () => new SqsSliceQueue(new SQSClient({ region: 'eu-west-1' }), QUEUE_URL, () => Promise.resolve());

  it('sends ten messages per SendMessageBatch with their group and deduplication ids', async () => {
    sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });

    await queue().send(Array.from({ length: 23 }, (_, i) => message(i)));

    expect(sqs).toHaveReceivedCommandTimes(SendMessageBatchCommand, 3);
    const batches = sqs.commandCalls(SendMessageBatchCommand).map((call) => call.args[0].input.Entries ?? []);
    expect(batches.map((entries) => entries.length)).toEqual([10, 10, 3]);
    expect(batches[2]![2]).toEqual({ Id: '22', MessageBody: '{"i":22}', MessageGroupId: 'org-22/2026-11-22/10', MessageDeduplicationId: 'd22' });
    expect(sqs).toHaveReceivedCommandWith(SendMessageBatchCommand, { QueueUrl: QUEUE_URL });
  });

  it('sends again only the entries SQS failed on its side', async () => {
    sqs
      .on(SendMessageBatchCommand)
      .resolvesOnce({ Failed: [{ Id: '1', Code: 'InternalError', SenderFault: false }] })
      .resolves({ Failed: [] });

    await queue().send([message(0), message(1), message(2)]);

    const batches = sqs.commandCalls(SendMessageBatchCommand).map((call) => (call.args[0].input.Entries ?? []).map((entry) => entry.Id));
    expect(batches).toEqual([['0', '1', '2'], ['1']]);
  });

  it('gives up at once on an entry SQS rejects as the sender\'s fault, and after bounded retries on the rest', async () => {
    sqs.on(SendMessageBatchCommand).resolves({ Failed: [{ Id: '0', Code: 'InvalidParameterValue', Message: 'bad group id', SenderFault: true }] });
    await expect(queue().send([message(0)])).rejects.toThrow(expect.objectContaining({ name: 'SliceQueueSendError', message: 'compaction queue did not take 1 message(s): 0: InvalidParameterValue (bad group id)' }));
    expect(sqs).toHaveReceivedCommandTimes(SendMessageBatchCommand, 1);

    sqs.reset();
    sqs.on(SendMessageBatchCommand).resolves({ Failed: [{ Id: '0', Code: 'ThrottlingException', SenderFault: false }] });
    await expect(queue().send([message(0)])).rejects.toThrow(SliceQueueSendError);
    expect(sqs).toHaveReceivedCommandTimes(SendMessageBatchCommand, 4);
  });
});

describe('SqsSliceRetries', () => {
  const sqs = mockClient(SQSClient);
  beforeEach(() => sqs.reset());

  it('makes the failed message visible again after the delay, by its receipt handle', async () => {
    sqs.on(ChangeMessageVisibilityCommand).resolves({});
    await new SqsSliceRetries(new SQSClient({ region: 'eu-west-1' }), QUEUE_URL).retryAfter('rh-1', 600);
    expect(sqs).toHaveReceivedCommandWith(ChangeMessageVisibilityCommand, { QueueUrl: QUEUE_URL, ReceiptHandle: 'rh-1', VisibilityTimeout: 600 });
  });

  it('sends a waiting switch again with its body, group and deduplication id', async () => {
    sqs.on(SendMessageCommand).resolves({});
    await new SqsSliceRetries(new SQSClient({ region: 'eu-west-1' }), QUEUE_URL).sendAgain(message(7));
    expect(sqs).toHaveReceivedCommandWith(SendMessageCommand, { QueueUrl: QUEUE_URL, MessageBody: '{"i":7}', MessageGroupId: 'org-7/2026-11-22/10', MessageDeduplicationId: 'd7' });
  });
});
