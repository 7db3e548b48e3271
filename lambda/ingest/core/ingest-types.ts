import type { ApiKey, Organization, Quotas } from '../../shared/domain/tenancy.js';
import type { QuotaState } from './rate/quota-headers.js';
import type { ValidationIssue } from './validation/issue-codes.js';
import type { DroppedSpan } from './validation/validate-trace.js';

/** Who sent a request: an active key of an organization that may ingest, and the quotas it runs under. */
export interface Caller {
  key: ApiKey;
  org: Organization;
  /** The quotas the organization runs under: its overrides where it has them, else its plan's. */
  quotas: Quotas;
}

/** When and as which request traces arrived; every accepted trace carries both. */
export interface Arrival {
  requestId: string;
  receivedAtMicros: number;
  /**
   * What names the request's records (`record_id` = `<identity>/<index>`): the request id, unless
   * an Idempotency-Key makes every resend of the same body a copy of the first.
   */
  requestIdentity?: string;
  /** Aborted once the handler has answered for the request (its deadline): what is left undone stays undone. */
  signal?: AbortSignal;
  /** When `signal` aborts (epoch milliseconds): no call to a dependency is given time beyond it. */
  deadlineAtMs?: number;
}

/** Why one trace of a batch was rejected. */
export interface TraceError {
  index: number;
  trace_id: string | null;
  issues: ValidationIssue[];
}

export interface IngestResult {
  accepted: number;
  rejected: number;
  errors: TraceError[];
  /** What the request was authorized as, for logs and metrics. */
  orgId: string;
  apiKeyId: string;
  /** True when this is the stored response of an earlier request with the same Idempotency-Key. */
  replayed?: boolean;
  /** The organization's windows after this request, for the `RateLimit` headers. */
  quotaState?: QuotaState[];
  /** Spans left out of traces that landed without them (`drops-span` candidates only). */
  droppedSpans?: DroppedSpans[];
}

/** Spans left out of a trace that landed without them (`drops-span` candidates). */
export interface DroppedSpans {
  /** Index of the candidate in the request. */
  index: number;
  spans: DroppedSpan[];
}
