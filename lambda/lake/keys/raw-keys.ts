import { type Partition, rawPartitionPrefix } from './partition.js';
import type { DatasetName } from '../../datasets/registry.js';
import { DATA_PREFIXES } from '../../shared/service-constants.js';

/** Where the records of one shard's batch land: one object per dataset, partition and batch. */
export interface LandingGroupKey extends Partition {
  shardId: string;
  /** Sequence number of the group's first record in the batch. */
  firstSequenceNumber: string;
}

// Keyed by the first sequence number of the group in the batch, so a retried or bisected batch
// overwrites its own objects instead of adding a second copy of the rows.
export function landingObjectKey(dataset: DatasetName, group: LandingGroupKey): string {
  return `${rawPartitionPrefix(dataset, group)}${group.shardId}-${group.firstSequenceNumber}.parquet`;
}

/** The slice of a raw key `<dataset>/org_id=…/dt=…/hour=…/<file>`, or undefined for any other key. */
export function sliceOfRawKey(key: string): Partition | undefined {
  const match = /^(?:traces|spans)\/org_id=([^/]+)\/dt=(\d{4}-\d{2}-\d{2})\/hour=(\d{2})\/[^/]+\.parquet$/.exec(key);
  return match ? { orgId: match[1]!, dt: match[2]!, hour: match[3]! } : undefined;
}

/** One object per undecodable record, so dead-lettering it again on a retry overwrites it. */
export function deadLetterObjectKey(shardId: string, sequenceNumber: string, arrivedAt: Date): string {
  return `${DATA_PREFIXES.deadLetter}dt=${arrivedAt.toISOString().slice(0, 10)}/${shardId}-${sequenceNumber}.json`;
}
