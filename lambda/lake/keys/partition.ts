import { DATA_PREFIXES } from '../../shared/service-constants.js';
import type { DatasetName } from '../../datasets/registry.js';

/** An organization's hour of trace timestamps: the Hive partition (`PARTITION_KEYS`) of every landed and compacted object. */
export interface Partition {
  orgId: string;
  /** `YYYY-MM-DD`, UTC. */
  dt: string;
  /** `00`–`23`, UTC. */
  hour: string;
}

/** The Hive partition path of an organization's hour, `org_id=…/dt=…/hour=…/`: raw, compacted and manifest keys share it. */
export function partitionPath({ orgId, dt, hour }: Partition): string {
  return `org_id=${orgId}/dt=${dt}/hour=${hour}/`;
}

/** Prefix of a dataset's raw objects of a partition: the landing writes its objects under it, compaction lists them there. */
export function rawPartitionPrefix(dataset: DatasetName, partition: Partition): string {
  return `${DATA_PREFIXES[dataset]}${partitionPath(partition)}`;
}
