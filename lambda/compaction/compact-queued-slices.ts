import { type Slice, sliceId } from '../lake/keys/compacted-keys.js';
import { compactOneSlice } from './compact-pending.js';
import type { SliceCompaction } from '../lake/lifecycle/compact-slice.js';
import { type PartCompaction, PartsNotReadyError, compactPart, switchParts } from '../lake/lifecycle/part-workers.js';
import type { CompactionDeps } from '../lake/ports.js';
import { type CompactionMessage, parseCompactionMessage } from './slice-message.js';
import { type HourDeletion, expireHour } from '../lake/lifecycle/expire-hour.js';

/** A message of the compaction queue as the worker receives it. */
export interface QueuedSlice {
  messageId: string;
  body: string;
}

export interface QueuedSlicesOutcome {
  /** Messages to leave on the queue: SQS delivers them again after the visibility timeout, then to the DLQ. */
  failedMessageIds: string[];
  /** Slices compacted or switched to a part plan's generation (`up-to-date` ones left out). */
  compacted: SliceCompaction[];
  /** Part workers' results. */
  parts: PartCompaction[];
  /** Hours deleted past their organization's retention. */
  expired: HourDeletion[];
  failed: { messageId: string; slice?: string; error: string }[];
  /** Switches whose parts are not all written yet: left on the queue like failures, but not failures. */
  waiting: { messageId: string; slice: string; error: string }[];
}

type Handled = { ok: true } | { ok: false; waiting: boolean; error: string };

/** Does what one message asks; a failure is returned, not thrown. */
async function handle(deps: CompactionDeps, message: CompactionMessage, outcome: QueuedSlicesOutcome): Promise<Handled> {
  if (message.kind === 'slice') {
    const result = await compactOneSlice(deps, message.slice);
    if (!result.ok) return { ok: false, waiting: false, error: result.error };
    if (result.result.outcome !== 'up-to-date') outcome.compacted.push(result.result);
    return { ok: true };
  }
  if (message.kind === 'expire') {
    try {
      const deletion = await expireHour(deps.store, message);
      outcome.expired.push(deletion);
      deps.logger?.info('Deleted an hour past its retention', { ...deletion, slice: sliceId(message.slice) });
      return { ok: true };
    } catch (error) {
      deps.logger?.error('Deleting an hour past its retention failed; it is retried, and planned again by the next sweep', { slice: sliceId(message.slice), error });
      return { ok: false, waiting: false, error: (error as Error).message ?? String(error) };
    }
  }
  const context = { slice: sliceId(message.slice), plan: message.plan, ...(message.kind === 'part' ? { part: message.part } : {}) };
  try {
    if (message.kind === 'part') {
      const result = await compactPart(deps, message.slice, message.plan, message.part);
      outcome.parts.push(result);
      deps.logger?.info('Compacted a part of a slice', { ...context, outcome: result.outcome, rowsRead: result.rowsRead, objectsWritten: result.objectsWritten });
    } else {
      const result = await switchParts(deps, message.slice, message.plan);
      if (result.outcome !== 'up-to-date') {
        outcome.compacted.push(result);
        deps.logger?.info('Switched a slice to its part workers\' generation', { ...result, slice: sliceId(message.slice) });
      }
    }
    return { ok: true };
  } catch (error) {
    const text = (error as Error).message ?? String(error);
    if (error instanceof PartsNotReadyError) {
      deps.logger?.info('The switch waits for the part workers; it comes back after the retry delay', { ...context, error: text });
      return { ok: false, waiting: true, error: text };
    }
    deps.logger?.error(`The ${message.kind} of a split slice failed; the slice stays on its raw objects until a later run succeeds`, { ...context, error });
    return { ok: false, waiting: false, error: text };
  }
}

/**
 * The worker of deployed compaction: does what each message asks, in order: compacts the slice it names (listed
 * and compared with its manifest afresh, so such a message is only a prompt: one for a slice already compacted
 * costs a GET and two LISTs), writes one part of a part plan, or switches a slice to its parts. On the first
 * failure the rest of the batch is reported failed without being tried, as SQS FIFO requires (a later message of
 * the same group must not overtake it); with a batch size of 1 the batch is that one message.
 */
export async function compactQueuedSlices(deps: CompactionDeps, messages: readonly QueuedSlice[]): Promise<QueuedSlicesOutcome> {
  const outcome: QueuedSlicesOutcome = { failedMessageIds: [], compacted: [], parts: [], expired: [], failed: [], waiting: [] };
  for (const message of messages) {
    if (outcome.failedMessageIds.length > 0) {
      outcome.failedMessageIds.push(message.messageId);
      continue;
    }
    let parsed: CompactionMessage;
    try {
      parsed = parseCompactionMessage(message.body);
    } catch (error) {
      deps.logger?.error('A compaction message names no slice; it goes to the dead-letter queue after its retries', { messageId: message.messageId, error });
      outcome.failed.push({ messageId: message.messageId, error: (error as Error).message });
      outcome.failedMessageIds.push(message.messageId);
      continue;
    }
    const slice: Slice = parsed.slice;
    const handled = await handle(deps, parsed, outcome);
    if (handled.ok) continue;
    (handled.waiting ? outcome.waiting : outcome.failed).push({ messageId: message.messageId, slice: sliceId(slice), error: handled.error });
    outcome.failedMessageIds.push(message.messageId);
  }
  return outcome;
}
