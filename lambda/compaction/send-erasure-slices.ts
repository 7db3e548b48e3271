import { sliceId } from '../lake/keys/compacted-keys.js';
import type { LakeStore } from '../lake/ports.js';
import type { SliceQueue } from './plan-compaction.js';
import { sliceMessage } from './slice-message.js';
import { type ErasurePlan, type ErasureSecret, type StoredErasures, planErasures } from '../erasure/stored-erasures.js';

export interface ErasurePlannerDeps {
  store: LakeStore;
  erasures: StoredErasures;
  secret: ErasureSecret;
  queue: SliceQueue;
  now?: () => Date;
}

/**
 * The planner's erasure step (deployed): finds the hours of new requests, marks finished ones done, and sends each
 * hour an open request still needs to the compaction queue as an ordinary slice message. Its message group is the
 * slice's, so the rewrite never runs beside another compaction of that hour; the worker compacts the slice as
 * always, and compaction applies the open requests of its organization (lambda/lake/lifecycle/compact-slice.ts).
 * A request is done at the first planner run after its last hour is rewritten: two schedule periods plus the queue.
 */
export async function sendErasureSlices(deps: ErasurePlannerDeps): Promise<ErasurePlan> {
  const now = deps.now ?? (() => new Date());
  const plan = await planErasures(deps.store, deps.erasures, deps.secret, now);
  const plannedAt = now();
  const messages = plan.slices.map((slice) => sliceMessage({ slice, reason: 'erasure', raw: { traces: [], spans: [] }, fingerprint: plan.fingerprints.get(sliceId(slice))! }, plannedAt));
  if (messages.length > 0) await deps.queue.send(messages);
  return plan;
}
