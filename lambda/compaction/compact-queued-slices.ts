import { type Slice, sliceId } from './compaction-keys.js';
import { compactOneSlice } from './compact-pending.js';
import type { SliceCompaction } from './compact-slice.js';
import type { CompactionDeps } from './ports.js';
import { parseSliceMessage } from './slice-message.js';

/** A message of the compaction queue as the worker receives it. */
export interface QueuedSlice {
  messageId: string;
  body: string;
}

export interface QueuedSlicesOutcome {
  /** Messages to leave on the queue: SQS delivers them again after the visibility timeout, then to the DLQ. */
  failedMessageIds: string[];
  compacted: SliceCompaction[];
  failed: { messageId: string; slice?: string; error: string }[];
}

/**
 * The worker of deployed compaction: compacts the slice each message names, in order. The slice is listed and
 * compared with its manifest afresh, so a message is only a prompt: one for a slice already compacted costs a
 * GET and two LISTs. On the first failure the rest of the batch is reported failed without being tried, as SQS
 * FIFO requires (a later message of the same group must not overtake it); with a batch size of 1 the batch is
 * that one message.
 */
export async function compactQueuedSlices(deps: CompactionDeps, messages: readonly QueuedSlice[]): Promise<QueuedSlicesOutcome> {
  const outcome: QueuedSlicesOutcome = { failedMessageIds: [], compacted: [], failed: [] };
  for (const message of messages) {
    if (outcome.failedMessageIds.length > 0) {
      outcome.failedMessageIds.push(message.messageId);
      continue;
    }
    let slice: Slice;
    try {
      slice = parseSliceMessage(message.body);
    } catch (error) {
      deps.logger?.error('A compaction message names no slice; it goes to the dead-letter queue after its retries', { messageId: message.messageId, error });
      outcome.failed.push({ messageId: message.messageId, error: (error as Error).message });
      outcome.failedMessageIds.push(message.messageId);
      continue;
    }
    const result = await compactOneSlice(deps, slice);
    if (result.ok) {
      if (result.result.outcome !== 'up-to-date') outcome.compacted.push(result.result);
    } else {
      outcome.failed.push({ messageId: message.messageId, slice: sliceId(slice), error: result.error });
      outcome.failedMessageIds.push(message.messageId);
    }
  }
  return outcome;
}
