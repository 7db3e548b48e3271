import { DATA_PREFIXES } from '../shared/service-constants.js';
import type { DatasetName } from './landing-schema.js';

/** Where the records of one shard's batch land: one object per dataset, partition and batch. */
export interface LandingGroupKey {
  shardId: string;
  orgId: string;
  dt: string;
  /** UTC hour of the trace timestamps, `00`–`23`: the unit of compaction. */
  hour: string;
  /** Sequence number of the group's first record in the batch. */
  firstSequenceNumber: string;
}

/** The Hive partition path of an organization's hour, `org_id=…/dt=…/hour=…/`: raw, compacted and manifest keys share it. */
export function partitionPath({ orgId, dt, hour }: { orgId: string; dt: string; hour: string }): string {
  return `org_id=${orgId}/dt=${dt}/hour=${hour}/`;
}

// Keyed by the first sequence number of the group in the batch, so a retried or bisected batch
// overwrites its own objects instead of adding a second copy of the rows.
export function landingObjectKey(dataset: DatasetName, group: LandingGroupKey): string {
  return `${DATA_PREFIXES[dataset]}${partitionPath(group)}${group.shardId}-${group.firstSequenceNumber}.parquet`;
}

/** One object per undecodable record, so dead-lettering it again on a retry overwrites it. */
export function deadLetterObjectKey(shardId: string, sequenceNumber: string, arrivedAt: Date): string {
  return `${DATA_PREFIXES.deadLetter}dt=${arrivedAt.toISOString().slice(0, 10)}/${shardId}-${sequenceNumber}.json`;
}
