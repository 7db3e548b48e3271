import type { SliceRetries } from '../../lambda/compaction/create-worker-handler.js';
import type { SliceMessage } from '../../lambda/compaction/slice-message.js';

/**
 * A model of an SQS FIFO queue with a redrive policy, on a virtual clock, reduced to what the claim "never two
 * compactions of one slice at once" rests on (see the SQS Developer Guide, "FIFO queue key terms" and
 * "dead-letter queues"):
 * - a message deduplication id seen within the 5-minute interval after its first send is accepted and dropped,
 *   and the id is remembered even after that message was received and deleted;
 * - while a message of a group is in flight (received, not deleted, visibility timeout running), no other
 *   message of that group is handed out; messages of a group come out in the order they were sent;
 * - a message not deleted becomes visible again when its visibility timeout ends; one received
 *   `maxReceiveCount` times is moved to the dead-letter queue instead of being handed out again.
 * Not modelled: high-throughput mode, batches of several messages of one group, retention.
 */
export class FifoQueueModel {
  static readonly DEDUPLICATION_INTERVAL_MS = 5 * 60 * 1000;

  now = 0;
  readonly deadLetters: QueuedMessage[] = [];
  private readonly messages: QueuedMessage[] = [];
  private readonly dedupSeenAt = new Map<string, number>();
  private nextId = 1;

  constructor(private readonly options: { visibilityTimeoutMs: number; maxReceiveCount: number }) {}

  /** SendMessage(Batch): returns the messages actually enqueued (duplicates are accepted, not enqueued). */
  send(messages: readonly SliceMessage[]): QueuedMessage[] {
    const enqueued: QueuedMessage[] = [];
    for (const message of messages) {
      const seen = this.dedupSeenAt.get(message.deduplicationId);
      if (seen !== undefined && this.now - seen < FifoQueueModel.DEDUPLICATION_INTERVAL_MS) continue;
      this.dedupSeenAt.set(message.deduplicationId, this.now);
      const queued: QueuedMessage = { ...message, messageId: `m${this.nextId++}`, receiveCount: 0, invisibleUntil: -1 };
      this.messages.push(queued);
      enqueued.push(queued);
    }
    return enqueued;
  }

  /** ReceiveMessage as Lambda's poller uses it with a batch size of 1: at most one message per group, up to `max`. */
  receive(max: number): QueuedMessage[] {
    const handedOut: QueuedMessage[] = [];
    const groups = new Set<string>();
    for (const message of [...this.messages]) {
      if (handedOut.length >= max) break;
      if (groups.has(message.groupId)) continue;
      groups.add(message.groupId);
      // The group's first message decides: in flight, it locks the group; visible, it is the one handed out.
      if (message.invisibleUntil > this.now) continue;
      if (message.receiveCount >= this.options.maxReceiveCount) {
        this.remove(message);
        this.deadLetters.push(message);
        groups.delete(message.groupId);
        continue;
      }
      message.receiveCount++;
      message.invisibleUntil = this.now + this.options.visibilityTimeoutMs;
      handedOut.push(message);
    }
    return handedOut;
  }

  /** ChangeMessageVisibility of a message in flight: visible again `seconds` from now. */
  changeVisibility(messageId: string, seconds: number): void {
    const message = this.messages.find((m) => m.messageId === messageId);
    if (message && message.invisibleUntil > this.now) message.invisibleUntil = this.now + seconds * 1000;
  }

  /** The worker's retries on this queue: ChangeMessageVisibility and SendMessage; the receipt handle is the message id. */
  get workerRetries(): SliceRetries {
    return { retryAfter: async (receiptHandle, seconds) => this.changeVisibility(receiptHandle, seconds), sendAgain: async (message) => void this.send([message]) };
  }

  delete(messageId: string): void {
    const message = this.messages.find((m) => m.messageId === messageId);
    if (message) this.remove(message);
  }

  /** Moves the clock to the next moment a message becomes visible; false when nothing is waiting. */
  advanceToNextVisible(): boolean {
    const next = Math.min(...this.messages.map((m) => m.invisibleUntil).filter((t) => t > this.now));
    if (!Number.isFinite(next)) return false;
    this.now = next;
    return true;
  }

  get depth(): number {
    return this.messages.length;
  }

  private remove(message: QueuedMessage): void {
    this.messages.splice(this.messages.indexOf(message), 1);
  }
}

export interface QueuedMessage extends SliceMessage {
  messageId: string;
  receiveCount: number;
  invisibleUntil: number;
}

/** A record as the event source hands it to the worker; the receipt handle is the message id in the model. */
export interface DeliveredRecord {
  messageId: string;
  receiptHandle: string;
  body: string;
  attributes: { ApproximateReceiveCount: string };
}

/** What a worker invocation answers: the messages to leave on the queue. */
export type WorkerInvocation = (records: DeliveredRecord[]) => Promise<{ batchItemFailures: { itemIdentifier: string }[] }>;

/**
 * Lambda's SQS event source over the model, batch size 1: up to `maxConcurrency` invocations at once, a message
 * deleted when its invocation does not report it failed, left to its visibility timeout otherwise. Runs until the
 * queue is empty; `events` records what happened, in order.
 */
export async function drainWithEventSource(queue: FifoQueueModel, invoke: WorkerInvocation, maxConcurrency: number, events: string[] = []): Promise<string[]> {
  for (;;) {
    const batch = queue.receive(maxConcurrency);
    if (batch.length === 0) {
      if (queue.advanceToNextVisible()) continue;
      return events;
    }
    await Promise.all(
      batch.map(async (message) => {
        events.push(`receive ${message.messageId} ${message.groupId}`);
        const { batchItemFailures } = await invoke([
          { messageId: message.messageId, receiptHandle: message.messageId, body: message.body, attributes: { ApproximateReceiveCount: String(message.receiveCount) } },
        ]);
        if (batchItemFailures.some((failure) => failure.itemIdentifier === message.messageId)) {
          events.push(`fail ${message.messageId}`);
        } else {
          queue.delete(message.messageId);
          events.push(`delete ${message.messageId}`);
        }
      }),
    );
  }
}
