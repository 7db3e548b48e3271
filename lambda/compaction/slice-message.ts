import { createHash } from 'node:crypto';
import { type Slice, sliceId } from './compaction-keys.js';
import type { PendingReason, PendingSlice } from './compact-pending.js';

/** One message of the compaction queue (SQS FIFO): "compact this slice". */
export interface SliceMessage {
  /**
   * The slice id: SQS FIFO hands out one message of a group at a time and the next only once it is deleted, so
   * two compactions of one slice never run at once, however many workers run.
   */
  groupId: string;
  /**
   * The pending slice's fingerprint: a re-plan of the same pending state within SQS's 5-minute deduplication
   * interval (a retried or doubled planner run) is accepted by SQS and not delivered again.
   */
  deduplicationId: string;
  body: string;
}

/** The body's shape, version 1. */
interface SliceMessageBody {
  v: 1;
  org_id: string;
  dt: string;
  hour: string;
  reason: PendingReason;
  planned_at: string;
}

export class InvalidSliceMessageError extends Error {
  override name = 'InvalidSliceMessageError';
}

/** SQS's rule for group and deduplication ids: 1–128 characters, letters, digits and ASCII punctuation. */
const SQS_ID = /^[\x21-\x7e]{1,128}$/;

/** The slice id when SQS accepts it as a group id (readable in the console), else a hash of it. */
export function sliceGroupId(slice: Slice): string {
  const id = sliceId(slice);
  return SQS_ID.test(id) ? id : `sha256:${createHash('sha256').update(id).digest('hex')}`;
}

export function sliceMessage(pending: PendingSlice, plannedAt: Date): SliceMessage {
  const { orgId, dt, hour } = pending.slice;
  const body: SliceMessageBody = { v: 1, org_id: orgId, dt, hour, reason: pending.reason, planned_at: plannedAt.toISOString() };
  return { groupId: sliceGroupId(pending.slice), deduplicationId: pending.fingerprint, body: JSON.stringify(body) };
}

/** The slice a message names; anything else is an error, never guessed at. */
export function parseSliceMessage(body: string): Slice {
  let parsed: Partial<SliceMessageBody> | null;
  try {
    parsed = JSON.parse(body) as Partial<SliceMessageBody> | null;
  } catch (error) {
    throw new InvalidSliceMessageError('compaction message is not JSON', { cause: error });
  }
  const orgId = parsed?.org_id;
  if (
    parsed?.v !== 1 ||
    typeof orgId !== 'string' ||
    !/^[^/]+$/.test(orgId) ||
    typeof parsed.dt !== 'string' ||
    !/^\d{4}-\d{2}-\d{2}$/.test(parsed.dt) ||
    typeof parsed.hour !== 'string' ||
    !/^([01]\d|2[0-3])$/.test(parsed.hour)
  ) {
    throw new InvalidSliceMessageError(`compaction message does not name a slice (v 1, org_id, dt YYYY-MM-DD, hour 00–23): ${body.slice(0, 200)}`);
  }
  return { orgId, dt: parsed.dt, hour: parsed.hour };
}
