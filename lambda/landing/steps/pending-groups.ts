import { recordIdentity } from '../../shared/domain/trace-record.js';
import type { LandingRecord } from '../landing-types.js';
import type { LandableTrace } from '../../datasets/registry.js';
import type { LandingGroupKey } from '../../lake/keys/raw-keys.js';

/** The traces of one shard, organization and hour that land together in one object per dataset. */
export interface LandingGroup extends LandingGroupKey {
  traces: LandableTrace[];
}

/** How much decoded input may wait before it is written out. */
export interface PendingBounds {
  maxSpanRows: number;
  maxTextCharacters: number;
}

/**
 * The traces of a batch waiting to be written, grouped by shard, organization and hour. It skips
 * copies of a record already seen in the batch, and says when the pending traces pass a memory bound.
 */
export class PendingGroups {
  private readonly groups = new Map<string, LandingGroup>();
  private readonly seen = new Set<string>();
  private spanRows = 0;
  private textCharacters = 0;

  constructor(private readonly bounds: PendingBounds) {}

  /** Adds a trace to its group; false, and nothing added, when the batch already held a copy. */
  add(record: LandingRecord, trace: LandableTrace): boolean {
    // A PutRecords entry resent after a lost answer, or a resend under the same Idempotency-Key,
    // is a copy of a record this batch already holds.
    const identity = recordIdentity(trace.context, trace.trace.trace_id);
    if (this.seen.has(identity)) return false;
    this.seen.add(identity);
    const id = `${record.shardId}\n${trace.context.org_id}\n${trace.dt}\n${trace.hour}`;
    const group = this.groups.get(id);
    if (group) group.traces.push(trace);
    else this.groups.set(id, { shardId: record.shardId, orgId: trace.context.org_id, dt: trace.dt, hour: trace.hour, firstSequenceNumber: record.sequenceNumber, traces: [trace] });
    this.spanRows += trace.trace.spans.length;
    this.textCharacters += textCharacters(trace);
    return true;
  }

  /** True once the pending traces reach either bound: time to write them out. */
  get full(): boolean {
    return this.spanRows >= this.bounds.maxSpanRows || this.textCharacters >= this.bounds.maxTextCharacters;
  }

  /** Hands over every pending group and starts empty; the copies seen stay remembered. */
  drain(): LandingGroup[] {
    const drained = [...this.groups.values()];
    this.groups.clear();
    this.spanRows = 0;
    this.textCharacters = 0;
    return drained;
  }
}

/** Characters of the strings a trace holds, the part of its memory that grows with the input. */
function textCharacters({ trace }: LandableTrace): number {
  let characters = trace.attributes.length;
  for (const span of trace.spans) {
    characters += span.input.length + span.output.length + span.attributes.length + (span.error_message?.length ?? 0) + span.name.length;
  }
  return characters;
}
