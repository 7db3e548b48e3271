import type { StructuredLogger } from '../../shared/runtime/logger.js';
import type { IdempotencyStore } from './idempotency/ports.js';
import type { OverflowStore, TraceSink } from './publish/ports.js';
import type { RateLimiter, WindowUsageReader } from './rate/ports.js';
import type { TenancyReader } from './tenancy/ports.js';

/**
 * Everything the ingest core is given. Each port is declared beside the adapters that implement it
 * (`tenancy/`, `rate/`, `idempotency/`, `publish/`); tests and the bench give plain fakes.
 */
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
  logger: IngestLogger;
  /** Absent: nothing is counted (the handler gives its CloudWatch metrics). */
  metrics?: IngestMetrics;
}

/** The counters the ingest core adds to (the handler's Powertools `Metrics` behind them). */
export interface IngestMetrics {
  count(name: string, value: number): void;
}

/** The levels of the structured logger the ingest core writes to (Powertools' `Logger` fits). */
export type IngestLogger = Pick<StructuredLogger, 'warn' | 'error'>;
