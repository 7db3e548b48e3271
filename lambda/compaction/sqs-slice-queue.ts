import { SendMessageBatchCommand, type SendMessageBatchRequestEntry, type SQSClient } from '@aws-sdk/client-sqs';
import { type BackoffPolicy, type Sleep } from '../shared/runtime/backoff.js';
import { retryWithBackoff } from '../shared/runtime/retry.js';
import type { SliceQueue } from './plan-compaction.js';
import type { SliceMessage } from './slice-message.js';

/** SendMessageBatch takes at most 10 entries. */
const ENTRIES_PER_BATCH = 10;

/** Retries of the entries SQS failed on its side (throttling, internal errors); the client retries whole calls. */
const ENTRY_RETRIES: BackoffPolicy = { maxAttempts: 4, baseDelayMs: 200, maxDelayMs: 2000 };

export class SliceQueueSendError extends Error {
  override name = 'SliceQueueSendError';
}

/** Adapter: the compaction queue (SQS FIFO), ten messages per SendMessageBatch. */
export class SqsSliceQueue implements SliceQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
    private readonly sleep?: Sleep,
  ) {}

  async send(messages: readonly SliceMessage[]): Promise<void> {
    for (let start = 0; start < messages.length; start += ENTRIES_PER_BATCH) {
      await this.sendBatch(messages.slice(start, start + ENTRIES_PER_BATCH).map((message, i) => ({
        Id: String(start + i),
        MessageBody: message.body,
        MessageGroupId: message.groupId,
        MessageDeduplicationId: message.deduplicationId,
      })));
    }
  }

  // A batch succeeds or fails entry by entry: only the failed entries are sent again, and an entry SQS
  // rejects as the sender's fault (an invalid id or body) is not retried at all.
  private async sendBatch(entries: SendMessageBatchRequestEntry[]): Promise<void> {
    let remaining = entries;
    await retryWithBackoff<void>(
      {
        policy: ENTRY_RETRIES,
        ...(this.sleep ? { sleep: this.sleep } : {}),
        giveUp: (failure) => new SliceQueueSendError(`compaction queue did not take ${remaining.length} message(s): ${String((failure as Error).message ?? failure)}`, { cause: failure }),
      },
      async () => {
        const response = await this.client.send(new SendMessageBatchCommand({ QueueUrl: this.queueUrl, Entries: remaining }));
        const failed = response.Failed ?? [];
        if (failed.length === 0) return { done: undefined };
        const byId = new Set(failed.map((entry) => entry.Id));
        remaining = remaining.filter((entry) => byId.has(entry.Id));
        const summary = new Error(failed.map((entry) => `${entry.Id}: ${entry.Code}${entry.Message ? ` (${entry.Message})` : ''}`).join('; '));
        return { failed: summary, retryable: !failed.some((entry) => entry.SenderFault) };
      },
    );
  }
}
