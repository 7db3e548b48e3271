import { ChangeMessageVisibilityCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SliceRetries } from './create-worker-handler.js';
import type { SliceMessage } from './slice-message.js';

/**
 * Adapter: a failed slice's message is made visible again sooner (ChangeMessageVisibility on the compaction queue),
 * and a waiting switch is sent again as a fresh message (SendMessage), its receive count back to 0.
 */
export class SqsSliceRetries implements SliceRetries {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async retryAfter(receiptHandle: string, seconds: number): Promise<void> {
    await this.client.send(new ChangeMessageVisibilityCommand({ QueueUrl: this.queueUrl, ReceiptHandle: receiptHandle, VisibilityTimeout: seconds }));
  }

  async sendAgain(message: SliceMessage): Promise<void> {
    await this.client.send(new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: message.body, MessageGroupId: message.groupId, MessageDeduplicationId: message.deduplicationId }));
  }
}
