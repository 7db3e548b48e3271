import { ChangeMessageVisibilityCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SliceRetries } from './create-worker-handler.js';

/** Adapter: a failed slice's message is made visible again sooner (ChangeMessageVisibility on the compaction queue). */
export class SqsSliceRetries implements SliceRetries {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async retryAfter(receiptHandle: string, seconds: number): Promise<void> {
    await this.client.send(new ChangeMessageVisibilityCommand({ QueueUrl: this.queueUrl, ReceiptHandle: receiptHandle, VisibilityTimeout: seconds }));
  }
}
