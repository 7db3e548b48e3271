import { type Partition, rawPartitionPrefix } from '../datasets/object-keys.js';
import type { DatasetName } from '../datasets/registry.js';
import { DATA_PREFIXES } from '../shared/service-constants.js';

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

/** One object per undecodable record, so dead-lettering it again on a retry overwrites it. */
export function deadLetterObjectKey(shardId: string, sequenceNumber: string, arrivedAt: Date): string {
  return `${DATA_PREFIXES.deadLetter}dt=${arrivedAt.toISOString().slice(0, 10)}/${shardId}-${sequenceNumber}.json`;
}
