import { DependencyUnavailableError } from '../../../shared/domain/errors.js';
import type { WindowCounter } from '../../../shared/domain/rate-windows.js';
import type { RateWindow } from '../../../shared/domain/tenancy.js';

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

/**
 * The per-request window transactions the lease policy (`LeasingRateLimiter`) builds on: a reserve and a
 * release exact per request id, a give-back applied once per id, and a count of the transactions that met
 * other writers. A reserve given up on contention throws `WindowContentionError`.
 */
export interface WindowReservations extends RateLimiter {
  /** Subtracts `count` from every window once per `giveBackId`, with no reservation to release (quota admitted from a closed lease). */
  giveBack(orgId: string, counters: readonly WindowCounter[], count: number, giveBackId: string): Promise<void>;
  /** How many of this instance's transactions for `orgId` were turned back by other writers or throttling (the organization is hot). */
  contentionCount(orgId: string): number;
  /** The same reservations with at most `maxAttempts` attempts each, under idempotency tokens of their own (`tokenScope`). */
  withAttempts(maxAttempts: number, tokenScope: string): WindowReservations;
}

/**
 * A window transaction given up because other writers held the organization's window items or the table
 * throttled it: the organization is hot. Still a dependency failure (503) to whoever does not lease.
 */
export class WindowContentionError extends DependencyUnavailableError {
  override name = 'WindowContentionError';
}

/** Traces counted in each window: a window with no counter item yet has counted nothing. */
export type WindowCounts = Partial<Record<RateWindow, number>>;

/** Reads how full an organization's windows are, for the `RateLimit` header and `admin org usage`. */
export interface WindowUsageReader {
  /** `justAdmitted`: the traces the request asking has just been admitted with (0 when none). */
  read(orgId: string, counters: readonly WindowCounter[], justAdmitted?: number): Promise<WindowCounts>;
}
