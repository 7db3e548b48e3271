import { createHash } from 'node:crypto';
import { sliceId } from '../lake/keys/compacted-keys.js';
import { type SliceMessage, type SliceMessageBody, sliceGroupId } from '../compaction/slice-message.js';
import type { HourExpiry } from '../lake/ports.js';

/**
 * The compaction-queue message that deletes an expired hour: in the hour's message group, so SQS FIFO never hands
 * it to a worker while a compaction or switch of the hour runs, nor one of those while it runs. Deduplicated per
 * step and planning minute: a doubled sweep collapses, the next hourly sweep sends again what is still there.
 */
export function expiryMessage({ slice, deleteCompacted }: HourExpiry, plannedAt: Date): SliceMessage {
  const body: SliceMessageBody = { v: 1, kind: 'expire', org_id: slice.orgId, dt: slice.dt, hour: slice.hour, reason: 'retention', planned_at: plannedAt.toISOString(), delete_compacted: deleteCompacted };
  const deduplicationId = createHash('sha256').update(`${sliceId(slice)}\nexpire\n${deleteCompacted}\n${plannedAt.toISOString().slice(0, 16)}`).digest('hex');
  return { groupId: sliceGroupId(slice), deduplicationId, body: JSON.stringify(body) };
}
