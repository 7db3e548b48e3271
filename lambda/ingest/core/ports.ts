import type { WindowCounter } from '../../shared/domain/rate-windows.js';
import type { ApiKey, Organization, Plan, RateWindow } from '../../shared/domain/tenancy.js';

/**
 * The ports of the ingest Lambda: everything the use case needs from the outside world, as roles.
 * Adapters (lambda/shared/adapters) implement them over DynamoDB, Kinesis and S3; tests and the
 * bench give plain fakes.
 */

/** The tenancy lookups the ingest path makes. */
export interface TenancyReader {
  getApiKeyByHash(secretHash: string): Promise<ApiKey | undefined>;
  getOrganization(orgId: string): Promise<Organization | undefined>;
  getPlan(name: string): Promise<Plan | undefined>;
  workspaceExists(orgId: string, slug: string): Promise<boolean>;
}

/** A window that has no room for the batch; `used` is its count when the store reported it. */
export type FullWindow = WindowCounter & { used?: number | undefined };

export type RateDecision = { allowed: true } | { allowed: false; overflowing: FullWindow[] };

/** Reserves a batch's traces in every window at once, or none. */
export interface RateLimiter {
  /** Never counts one request twice: a retried or repeated reserve of the same request id is a no-op. */
  reserve(orgId: string, counters: readonly WindowCounter[], count: number, requestId: string): Promise<RateDecision>;
  /**
   * Gives a request's reservation back when the request fails after reserving, or when the outcome
   * of its reserve is unknown: exact either way, because only an applied reservation is released.
   */
  release(orgId: string, counters: readonly WindowCounter[], count: number, requestId: string): Promise<void>;
}

/** Traces counted in each window: a window with no counter item yet has counted nothing. */
export type WindowCounts = Partial<Record<RateWindow, number>>;

/** Reads how full an organization's windows are, for the `RateLimit` header and `admin org usage`. */
export interface WindowUsageReader {
  /** `justAdmitted`: the traces the request asking has just been admitted with (0 when none). */
  read(orgId: string, counters: readonly WindowCounter[], justAdmitted?: number): Promise<WindowCounts>;
}

/** One record for the trace stream. */
export interface StreamRecord {
  partitionKey: string;
  data: Uint8Array;
}

/**
 * Puts records on the trace stream, all of them or an error; a `PublishIncompleteError` says how
 * many records are known not to be on the stream.
 */
export interface TraceSink {
  /** Publishes every record or throws; `signal`, once aborted, stops the work (the request has been answered). */
  publish(records: readonly StreamRecord[], options?: { signal?: AbortSignal }): Promise<void>;
}

/** Stores the body of a trace too large for one stream record. */
export interface OverflowStore {
  put(key: string, body: Uint8Array): Promise<{ bucket: string; key: string }>;
}

/** What a claim on an idempotency key found. */
export type IdempotencyClaim =
  | { kind: 'claimed' }
  | { kind: 'completed'; bodyHash: string; response: string }
  | { kind: 'in_progress'; bodyHash: string };

/** Remembers, per organization and key, the first request's body hash and its response. */
/**
 * Idempotency records. `claimToken` is unique to one request: a claim that holds it is that request's own,
 * so the SDK's retry of a claim whose answer was lost finds its own write instead of "in progress", and a
 * late `complete` or `release` never touches a claim another request took since.
 */
export interface IdempotencyStore {
  /** Claims the key for this request, or reports the request that holds it. */
  claim(orgId: string, key: string, bodyHash: string, nowSeconds: number, claimToken: string): Promise<IdempotencyClaim>;
  /** Stores the response of the request that holds the claim. Returns false when it could not be stored. */
  complete(orgId: string, key: string, response: string, nowSeconds: number, claimToken: string): Promise<boolean>;
  /** Gives this request's claim up, so a retry is processed afresh. */
  release(orgId: string, key: string, claimToken: string): Promise<void>;
}

/** The part of a structured logger the use case needs (Powertools' `Logger` fits). */
export interface IngestLog {
  warn(message: string, extra?: Record<string, unknown>): void;
  error(message: string, extra?: Record<string, unknown>): void;
}

/** Everything the ingest use case is given. */
export interface IngestDeps {
  tenancy: TenancyReader;
  rateLimiter: RateLimiter;
  sink: TraceSink;
  overflow: OverflowStore;
  /** Absent: answers carry `RateLimit-Policy` but no `RateLimit` (what is left is not known). */
  windowUsage?: WindowUsageReader;
  /** Absent: the Idempotency-Key header is ignored. */
  idempotency?: IdempotencyStore;
  /** Makes the `trace_id` of a trace sent without one. */
  newId: () => string;
  log: IngestLog;
}
