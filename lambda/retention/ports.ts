/**
 * The ports of the retention sweep: the data bucket as it needs it (ordered listings that stop early, deletes),
 * the tenancy table (organizations and plans), and where expired hours are sent.
 */
import type { HourExpiry, StoredObject } from '../lake/ports.js';
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

/** Where expired hours go: deployed, the compaction queue (the hour's message group); locally, deleted in this process. */
export interface HourExpirySink {
  expire(hours: readonly HourExpiry[]): Promise<void>;
}

export type RetentionLogger = Pick<StructuredLogger, 'info' | 'error'>;
