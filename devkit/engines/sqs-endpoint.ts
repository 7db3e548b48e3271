import { createHash, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SQSRecord } from 'aws-lambda';

/** A message the endpoint took, in the shape the event source mapping hands the worker. */
export type QueuedRecord = SQSRecord;

/**
 * The few SQS actions the compaction functions send, over the AWS JSON 1.0 protocol the SDK speaks
 * (`X-Amz-Target: AmazonSQS.<Action>`): SendMessage(Batch) keeps the messages for `drain()`, which
 * hands them out as event records; ChangeMessageVisibility and DeleteMessage are accepted. Enough
 * to run the bundled planner and worker end to end; not a queue (no visibility, FIFO groups or
 * redrive: devkit/fakes/fifo-queue-model.ts models those).
 */
export interface SqsEndpoint {
  readonly endpoint: string;
  /** Every action received, in order: which commands the bundles sent. */
  readonly actions: string[];
  queueUrl(name: string): string;
  /** The messages sent since the last drain, as SQS event records. */
  drain(): QueuedRecord[];
  stop(): Promise<void>;
}

const md5 = (text: string) => createHash('md5').update(text, 'utf8').digest('hex');

interface SendEntry {
  Id?: string;
  MessageBody: string;
  MessageGroupId?: string;
  MessageDeduplicationId?: string;
}

export async function startSqsEndpoint(region: string): Promise<SqsEndpoint> {
  const queued: QueuedRecord[] = [];
  const actions: string[] = [];
  const take = (queueUrl: string, entry: SendEntry) => {
    const messageId = randomUUID();
    queued.push({
      messageId,
      receiptHandle: randomUUID(),
      body: entry.MessageBody,
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: String(Date.now()),
        SenderId: 'local',
        ApproximateFirstReceiveTimestamp: String(Date.now()),
        ...(entry.MessageGroupId === undefined ? {} : { MessageGroupId: entry.MessageGroupId }),
        ...(entry.MessageDeduplicationId === undefined ? {} : { MessageDeduplicationId: entry.MessageDeduplicationId }),
      },
      messageAttributes: {},
      md5OfBody: md5(entry.MessageBody),
      eventSource: 'aws:sqs',
      eventSourceARN: `arn:aws:sqs:${region}:000000000000:${queueUrl.split('/').pop() ?? 'queue'}`,
      awsRegion: region,
    });
    return { MessageId: messageId, MD5OfMessageBody: md5(entry.MessageBody) };
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const action = String(req.headers['x-amz-target'] ?? '').replace(/^AmazonSQS\./, '');
      actions.push(action);
      const input = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { QueueUrl: string; Entries?: SendEntry[] } & SendEntry;
      let output: unknown = {};
      if (action === 'SendMessageBatch') {
        output = { Successful: (input.Entries ?? []).map((entry) => ({ Id: entry.Id, ...take(input.QueueUrl, entry) })), Failed: [] };
      } else if (action === 'SendMessage') {
        output = take(input.QueueUrl, input);
      } else if (action !== 'ChangeMessageVisibility' && action !== 'DeleteMessage') {
        res.writeHead(400, { 'Content-Type': 'application/x-amz-json-1.0' });
        res.end(JSON.stringify({ __type: 'com.amazonaws.sqs#UnsupportedOperation', message: `${action} is not modelled locally` }));
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/x-amz-json-1.0' });
      res.end(JSON.stringify(output));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    endpoint,
    actions,
    queueUrl: (name) => `${endpoint}/000000000000/${name}`,
    drain: () => queued.splice(0),
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
