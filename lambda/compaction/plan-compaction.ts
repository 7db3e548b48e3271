import { sliceId } from '../lake/keys/compacted-keys.js';
import { type PendingOptions, type PendingReason, type RawOrganizations, findPendingSlices } from './compact-pending.js';
import type { CompactionDeps } from '../lake/ports.js';
import { partPlanFor } from './plan-part-workers.js';
import { type SliceMessage, partPlanMessages, sliceMessage } from './slice-message.js';

/** The compaction queue as the planner needs it. */
export interface SliceQueue {
  /** Sends every message, or throws: a message the queue did not take is never dropped silently. */
  send(messages: readonly SliceMessage[]): Promise<void>;
}

export interface PlannerDeps extends Pick<CompactionDeps, 'store' | 'logger' | 'now' | 'supersededGraceMs'> {
  queue: SliceQueue;
  /** Lists the raw prefixes one organization at a time (deployed); without it, in one listing. */
  organizations?: RawOrganizations;
  /** Listed input bytes one worker is given before a slice is split across part workers (see part-plan.ts). */
  partWorkerBytes?: number;
}

export interface CompactionPlan {
  slicesSeen: number;
  open: number;
  /** Slices sent to the queue, by why they are pending. */
  planned: Record<PendingReason, number>;
  /** Of those, slices split across part workers (a part plan written or sent again). */
  split: number;
}

/**
 * The scheduled step of deployed compaction: finds the pending slices (as `npm run compact` does) and sends one
 * message per slice to the compaction queue, where workers pick them up, as soon as each organization has been
 * looked at; a slice too large for one worker gets a part plan, one message per part and a switch instead (see
 * plan-part-workers.ts). The planner compacts nothing itself.
 */
export async function planCompaction(deps: PlannerDeps, options: PendingOptions = {}): Promise<CompactionPlan> {
  const plannedAt = (deps.now ?? (() => new Date()))();
  // Sent organization by organization: a run cut short (timeout) has still queued what it looked at.
  const planned: Record<PendingReason, number> = { new: 0, uncovered: 0, cleanup: 0, 'unreadable-manifest': 0, erasure: 0 };
  const ids: string[] = [];
  let split = 0;
  const scan = await findPendingSlices(deps, {
    ...options,
    onPending: async (slices) => {
      const messages: SliceMessage[] = [];
      for (const pending of slices) {
        const plan = await partPlanFor(deps, pending);
        if (plan) split++;
        messages.push(...(plan ? partPlanMessages(pending, plan, plannedAt) : [sliceMessage(pending, plannedAt)]));
      }
      await deps.queue.send(messages);
      for (const pending of slices) {
        planned[pending.reason]++;
        ids.push(sliceId(pending.slice));
      }
    },
  });
  if (ids.length > 0) deps.logger?.info('Planned slices for compaction', { planned, split, slices: ids.sort().slice(0, 50) });
  return { slicesSeen: scan.slicesSeen, open: scan.open, planned, split };
}
