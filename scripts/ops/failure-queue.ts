import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  type Message,
  PurgeQueueCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { rangeFromFailureMessage, type ShardRange } from '../replay/replay-range.js';

/** One message of the landing's failure queue, as the operator sees it. */
export interface FailureView {
  message_id: string;
  /** The stream range the consumer gave up on; absent when the body is not an on-failure record. */
  range?: ShardRange;
  /** When the consumer gave up (the record's own timestamp). */
  failed_at?: string;
  problem?: string;
}

/** What `failures replay` did with one message. */
export interface ReplayOutcome extends FailureView {
  outcome: 'replayed' | 'would-replay' | 'failed' | 'skipped';
  /** Stream records read and landed again, for a replayed message. */
  records?: number;
}

/** While a run lasts, the messages it received stay hidden this long: replayed ones are deleted, the others made visible at its end. */
const REPLAY_VISIBILITY_SECONDS = 3_600;
/** Rounds of receives that bring no message not seen yet before a listing stops. */
const QUIET_ROUNDS = 2;

function viewOf(message: Message): FailureView {
  const view: FailureView = { message_id: message.MessageId ?? '' };
  try {
    const body = JSON.parse(message.Body ?? '') as { timestamp?: unknown };
    view.range = rangeFromFailureMessage(body);
    if (typeof body.timestamp === 'string') view.failed_at = body.timestamp;
  } catch (error) {
    view.problem = (error as Error).message;
  }
  return view;
}

/**
 * Lists the failure queue without taking anything off it: messages are received with a visibility
 * timeout of 0, so they stay visible, until rounds bring no new message.
 */
export async function listFailures(sqs: SQSClient, queueUrl: string, maxMessages = 1_000): Promise<FailureView[]> {
  const seen = new Map<string, FailureView>();
  let quiet = 0;
  while (quiet < QUIET_ROUNDS && seen.size < maxMessages) {
    const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0, WaitTimeSeconds: 1 }));
    const fresh = Messages.filter((message) => message.MessageId !== undefined && !seen.has(message.MessageId));
    for (const message of fresh) seen.set(message.MessageId as string, viewOf(message));
    quiet = fresh.length === 0 ? quiet + 1 : 0;
  }
  return [...seen.values()];
}

/**
 * Replays every range of the failure queue and deletes each message once its range has landed
 * again, so the queue (and its alarm) empties exactly as the replays succeed. A message whose replay
 * fails (or that is not an on-failure record) stays hidden until the run ends, so later receives
 * bring only messages not tried yet, and is made visible again at the end, for the next run and
 * the alarm. With `dryRun`, nothing is replayed or deleted.
 */
export async function replayFailures(
  deps: { sqs: SQSClient; queueUrl: string; replay: (range: ShardRange) => Promise<{ records: number }> },
  options: { dryRun: boolean },
): Promise<ReplayOutcome[]> {
  if (options.dryRun) return (await listFailures(deps.sqs, deps.queueUrl)).map((view) => ({ ...view, outcome: view.range ? 'would-replay' : 'skipped' }));
  const outcomes: ReplayOutcome[] = [];
  const attempted = new Set<string>();
  const kept: Message[] = [];
  try {
    for (;;) {
      const { Messages = [] } = await deps.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: deps.queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: REPLAY_VISIBILITY_SECONDS, WaitTimeSeconds: 1 }),
      );
      // Nothing left, or only messages tried already (their hiding ran out during a long run).
      const fresh = Messages.filter((message) => !attempted.has(message.MessageId ?? ''));
      if (fresh.length === 0) break;
      for (const message of fresh) {
        attempted.add(message.MessageId ?? '');
        const outcome = await replayOne(deps, message);
        if (outcome.outcome !== 'replayed') kept.push(message);
        outcomes.push(outcome);
      }
    }
  } finally {
    for (const message of kept) {
      await deps.sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: deps.queueUrl, ReceiptHandle: message.ReceiptHandle, VisibilityTimeout: 0 }));
    }
  }
  return outcomes;
}

async function replayOne(
  deps: { sqs: SQSClient; queueUrl: string; replay: (range: ShardRange) => Promise<{ records: number }> },
  message: Message,
): Promise<ReplayOutcome> {
  const view = viewOf(message);
  // Not an on-failure record: left on the queue for a person to look at (purge it when understood).
  if (!view.range) return { ...view, outcome: 'skipped' };
  try {
    const { records } = await deps.replay(view.range);
    // Nothing read: the stream no longer holds the range. The message stays, as the only trace of the loss.
    if (records === 0) throw new Error('the stream holds no record of this range any more (past its retention?); nothing was replayed');
    await deps.sqs.send(new DeleteMessageCommand({ QueueUrl: deps.queueUrl, ReceiptHandle: message.ReceiptHandle }));
    return { ...view, outcome: 'replayed', records };
  } catch (error) {
    return { ...view, outcome: 'failed', problem: (error as Error).message.split('\n')[0] ?? '' };
  }
}

/** Deletes every message of a queue (SQS allows one purge per queue per 60 seconds). */
export async function purgeQueue(sqs: SQSClient, queueUrl: string): Promise<void> {
  await sqs.send(new PurgeQueueCommand({ QueueUrl: queueUrl }));
}
