import { createHash } from 'node:crypto';
import { type Slice, sliceId } from '../lake/keys/compacted-keys.js';
import type { PendingReason, PendingSlice } from './compact-pending.js';
import type { PartPlanRef } from '../lake/lifecycle/part-plan.js';

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

/**
 * The body's shape, version 1. Without `kind` (or `kind: "slice"`): compact the slice in one run. A slice split
 * across part workers (see part-plan.ts) gets `kind: "part"` messages, one per part, and one `kind: "switch"`,
 * each naming the plan by generation, id and part count.
 */
export interface SliceMessageBody {
  v: 1;
  kind?: 'slice' | 'part' | 'switch' | 'expire';
  org_id: string;
  dt: string;
  hour: string;
  reason: PendingReason | 'retention';
  planned_at: string;
  generation?: number;
  plan_id?: string;
  parts?: number;
  part?: number;
  /** `kind: "expire"` (lambda/retention): delete the hour's compacted objects too, not only its raw objects and manifest. */
  delete_compacted?: boolean;
}

/** What a message of the compaction queue asks of the worker. */
export type CompactionMessage =
  /** Compact the slice in one run (listed afresh; the message is only a prompt). */
  | { kind: 'slice'; slice: Slice }
  /** Write part `part` of the plan's generation. */
  | { kind: 'part'; slice: Slice; plan: PartPlanRef; part: number }
  /** Switch the slice to the plan's generation once all its parts exist. */
  | { kind: 'switch'; slice: Slice; plan: PartPlanRef }
  /** Delete the hour, past its organization's retention (lambda/lake/lifecycle/expire-hour.ts). */
  | { kind: 'expire'; slice: Slice; deleteCompacted: boolean };

export class InvalidSliceMessageError extends Error {
  override name = 'InvalidSliceMessageError';
}

/** SQS's rule for group and deduplication ids: 1–128 characters, letters, digits and ASCII punctuation. */
const SQS_ID = /^[\x21-\x7e]{1,128}$/;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The id as it is when SQS accepts it as a group id (readable in the console), else a hash of it. */
const groupIdOf = (id: string) => (SQS_ID.test(id) ? id : `sha256:${sha256(id)}`);

/** The slice id when SQS accepts it as a group id (readable in the console), else a hash of it. */
export function sliceGroupId(slice: Slice): string {
  return groupIdOf(sliceId(slice));
}

/**
 * The group of a part worker's range: the slice and the range (`part` of `parts`), so that the parts of a slice run
 * in parallel, and a range (a redelivery, a plan sent again) never twice at once.
 */
export function partGroupId(slice: Slice, part: number, parts: number): string {
  return groupIdOf(`${sliceId(slice)}#part-${part}-of-${parts}`);
}

export function sliceMessage(pending: PendingSlice, plannedAt: Date): SliceMessage {
  const { orgId, dt, hour } = pending.slice;
  const body: SliceMessageBody = { v: 1, org_id: orgId, dt, hour, reason: pending.reason, planned_at: plannedAt.toISOString() };
  return { groupId: sliceGroupId(pending.slice), deduplicationId: pending.fingerprint, body: JSON.stringify(body) };
}

/**
 * The messages of a slice split across part workers: one per part (group: the slice and the range) and the switch
 * (group: the slice, like every other compaction of it). Deduplication ids are the plan's and the message's, so a
 * plan sent again within 5 minutes collapses; sent later, a part finds its objects written and the switch finds the
 * generation switched in.
 */
export function partPlanMessages(pending: PendingSlice, plan: PartPlanRef, plannedAt: Date): SliceMessage[] {
  const { orgId, dt, hour } = pending.slice;
  const common = { v: 1 as const, org_id: orgId, dt, hour, reason: pending.reason, planned_at: plannedAt.toISOString(), generation: plan.generation, plan_id: plan.id, parts: plan.parts };
  const planned = `${sliceId(pending.slice)}\n${plan.generation}\n${plan.id}`;
  const parts = Array.from({ length: plan.parts }, (_, part): SliceMessage => ({
    groupId: partGroupId(pending.slice, part, plan.parts),
    deduplicationId: sha256(`${planned}\npart ${part}`),
    body: JSON.stringify({ ...common, kind: 'part', part } satisfies SliceMessageBody),
  }));
  const switchMessage: SliceMessage = { groupId: sliceGroupId(pending.slice), deduplicationId: sha256(`${planned}\nswitch`), body: JSON.stringify({ ...common, kind: 'switch' } satisfies SliceMessageBody) };
  return [...parts, switchMessage];
}

/**
 * How long a switch may wait for its parts before its waiting counts as failing. A part's own life before it
 * reaches the dead-letter queue is at most ~2.5 h (5 receives of ≤ 15 min each, 5 + 10 + 20 + 40 min of backoff);
 * twice that leaves room for parts queued behind other hours. Past it, a part has failed for good (and is in the
 * dead-letter queue), so the switch goes there too, and the next planner run plans the slice again.
 */
export const SWITCH_WAIT_LIMIT_MS = 6 * 60 * 60 * 1000;

/**
 * A fresh copy of a switch that is waiting for its parts and still may (planned within {@link SWITCH_WAIT_LIMIT_MS}),
 * for the worker to send before its receives run out: waiting is not failing, so it must not reach the
 * dead-letter queue. Same body (so `planned_at` still bounds the wait), same group, a deduplication id of its own.
 * `undefined` for any other message, or a switch past the limit.
 */
export function renewedSwitch(body: string, messageId: string, now: Date): SliceMessage | undefined {
  const message = parseCompactionMessage(body);
  if (message.kind !== 'switch') return undefined;
  const plannedAt = Date.parse((JSON.parse(body) as SliceMessageBody).planned_at);
  if (!(now.getTime() - plannedAt < SWITCH_WAIT_LIMIT_MS)) return undefined;
  return { groupId: sliceGroupId(message.slice), deduplicationId: sha256(`${messageId}\nrenewed`), body };
}

/** The slice a message names, whatever it asks; anything else is an error, never guessed at. */
export function parseSliceMessage(body: string): Slice {
  return parseCompactionMessage(body).slice;
}

/** What a message asks, and of which slice; anything else is an error, never guessed at. */
export function parseCompactionMessage(body: string): CompactionMessage {
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
  const slice = { orgId, dt: parsed.dt, hour: parsed.hour };
  const kind = parsed.kind ?? 'slice';
  if (kind === 'slice') return { kind, slice };
  if (kind === 'expire') return { kind, slice, deleteCompacted: parsed.delete_compacted === true };
  const { generation, plan_id: id, parts, part } = parsed;
  if (
    (kind !== 'part' && kind !== 'switch') ||
    !Number.isSafeInteger(generation) ||
    generation! < 1 ||
    typeof id !== 'string' ||
    !/^[0-9a-f]{16}$/.test(id) ||
    !Number.isSafeInteger(parts) ||
    parts! < 1 ||
    (kind === 'part' && (!Number.isSafeInteger(part) || part! < 0 || part! >= parts!))
  ) {
    throw new InvalidSliceMessageError(`compaction message of ${sliceId(slice)} has an unknown kind or does not name a part plan (generation, plan_id, parts, part): ${body.slice(0, 200)}`);
  }
  const plan = { generation: generation!, id, parts: parts! };
  return kind === 'part' ? { kind, slice, plan, part: part! } : { kind, slice, plan };
}
