import type { DatasetName } from '../datasets/registry.js';

/** One record of a shard, as the event source mapping or the replay command reads it. */
export interface LandingRecord {
  shardId: string;
  sequenceNumber: string;
  data: Uint8Array;
  approximateArrivalTimestamp: Date;
}

/** What one landing did: records in, dead-lettered and skipped as copies; rows, objects and bytes written. */
export interface LandingSummary {
  recordsIn: number;
  deadLettered: number;
  /** Records skipped because a copy with the same identity came earlier in the batch. */
  duplicatesSkipped: number;
  rows: Record<DatasetName, number>;
  objectsWritten: number;
  bytesWritten: number;
}
