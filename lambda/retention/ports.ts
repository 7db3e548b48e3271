/**
 * The ports of the retention sweep: the data bucket as it needs it (ordered listings that stop early, deletes),
 * the tenancy table (organizations and plans), and where expired hours are sent.
 */
import type { StoredObject } from '../compaction/ports.js';
import type { Slice } from '../compaction/compaction-keys.js';
import type { Organization, Plan } from '../shared/domain/tenancy.js';
import type { StructuredLogger } from '../shared/runtime/logger.js';

export interface RetentionBucket {
  /** The objects under `prefix` whose keys sort before `bound`, in key order; the listing stops at `bound`. */
  listBefore(prefix: string, bound: string): Promise<StoredObject[]>;
  delete(keys: readonly string[]): Promise<void>;
}

export interface RetentionTenancy {
  listOrganizations(): Promise<Organization[]>;
  listPlans(): Promise<Plan[]>;
}

/**
 * One expired hour to delete. `deleteCompacted` false: its raw objects, then its manifest (after which no reader
 * sees the hour); true: its compacted objects and part plans, which only a run that found the hour without a
 * manifest asks for (see docs/operations.md "Retention").
 */
export interface HourExpiry {
  slice: Slice;
  deleteCompacted: boolean;
}

/** Where expired hours go: deployed, the compaction queue (the hour's message group); locally, deleted in this process. */
export interface HourExpirySink {
  expire(hours: readonly HourExpiry[]): Promise<void>;
}

export type RetentionLogger = Pick<StructuredLogger, 'info' | 'error'>;
