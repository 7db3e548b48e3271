import { sliceId } from './compaction-keys.js';
import { type PendingOptions, type PendingReason, type RawOrganizations, findPendingSlices } from './compact-pending.js';
import type { CompactionDeps } from './ports.js';
import { type SliceMessage, sliceMessage } from './slice-message.js';

/** The compaction queue as the planner needs it. */
export interface SliceQueue {
  /** Sends every message, or throws: a message the queue did not take is never dropped silently. */
  send(messages: readonly SliceMessage[]): Promise<void>;
}

export interface PlannerDeps extends Pick<CompactionDeps, 'store' | 'logger' | 'now' | 'supersededGraceMs'> {
  queue: SliceQueue;
  /** Lists the raw prefixes one organization at a time (deployed); without it, in one listing. */
  organizations?: RawOrganizations;
}

export interface CompactionPlan {
  slicesSeen: number;
  open: number;
  /** Slices sent to the queue, by why they are pending. */
  planned: Record<PendingReason, number>;
}

/**
 * The scheduled step of deployed compaction: finds the pending slices (as `npm run compact` does) and sends one
 * message per slice to the compaction queue, where workers pick them up, as soon as each organization has been
 * looked at. The planner compacts nothing itself.
 */
export async function planCompaction(deps: PlannerDeps, options: PendingOptions = {}): Promise<CompactionPlan> {
  const plannedAt = (deps.now ?? (() => new Date()))();
  // Sent organization by organization: a run cut short (timeout) has still queued what it looked at.
  const planned: Record<PendingReason, number> = { new: 0, uncovered: 0, cleanup: 0, 'unreadable-manifest': 0 };
  const ids: string[] = [];
  const scan = await findPendingSlices(deps, {
    ...options,
    onPending: async (slices) => {
      await deps.queue.send(slices.map((pending) => sliceMessage(pending, plannedAt)));
      for (const pending of slices) {
        planned[pending.reason]++;
        ids.push(sliceId(pending.slice));
      }
    },
  });
  if (ids.length > 0) deps.logger?.info('Planned slices for compaction', { planned, slices: ids.sort().slice(0, 50) });
  return { slicesSeen: scan.slicesSeen, open: scan.open, planned };
}
