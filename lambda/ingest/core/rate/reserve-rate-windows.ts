import { countersFor, decisiveWindow, RETRY_AFTER_SECONDS, secondsUntilReset, WINDOW_LABEL, type WindowCounter } from '../../../shared/domain/rate-windows.js';
import type { Quotas } from '../../../shared/domain/tenancy.js';
import { BatchExceedsQuotaError, dependencyUnavailable, RateLimitedError } from '../errors.js';
import type { Arrival } from '../ingest-types.js';
import type { FullWindow, RateLimiter } from './ports.js';
import type { IngestLogger } from '../ports.js';

/** A reservation that a later failure gives back, so a refused batch counts nothing. */
export interface Reservation {
  /** Gives back `count` traces (all of them when absent): only those known not to be stored. */
  giveBack(count?: number): Promise<void>;
}

/**
 * Check 9: counts `count` traces in all four rate windows of the organization, or in none. Throws
 * a 429 when a window has no room and a 503 when DynamoDB does not answer.
 */
export async function reserveRateWindows(
  ports: { rateLimiter: RateLimiter; logger: IngestLogger },
  caller: { org: { orgId: string }; quotas: Quotas },
  arrival: Arrival,
  count: number,
): Promise<Reservation> {
  const orgId = caller.org.orgId;
  const at = new Date(Math.floor(arrival.receivedAtMicros / 1000));
  const counters = countersFor(caller.quotas, at);
  const reservation: Reservation = { giveBack: (given = count) => giveBack(ports, orgId, counters, given, arrival.requestId) };
  const tooSmall = counters.filter((counter) => counter.quota < count);
  if (tooSmall.length > 0) throw rateLimited(tooSmall, count, true, at);
  let decision;
  try {
    decision = await ports.rateLimiter.reserve(orgId, counters, count, arrival.requestId);
  } catch (error) {
    // The reserve may have been applied with only its answer lost; giving back is exact either way.
    await reservation.giveBack();
    throw dependencyUnavailable(error);
  }
  if (!decision.allowed) throw rateLimited(decision.overflowing, count, false, at);
  return reservation;
}

/**
 * Why a 429's `Retry-After` and the window's reset (`t` in `RateLimit`) are two figures: the contract fixes
 * `Retry-After` per window whatever the moment of the refusal, so without this a client told 60 s beside `t=1` is left to guess.
 */
function retryAfterNote(window: FullWindow['window'], retryAfter: number, at: Date): string {
  return `Retry-After is ${retryAfter} s on every ${WINDOW_LABEL[window]} refusal, as the API contract fixes it; the window itself resets in ${secondsUntilReset(window, at)} s (t in RateLimit)`;
}

/** The 429 for the decisive full window, saying what is used, what is left and what the batch needs. */
function rateLimited(counters: readonly FullWindow[], count: number, batchTooLarge: boolean, at: Date): RateLimitedError {
  const decisive = decisiveWindow(counters) as FullWindow;
  const { window, quota, used } = decisive;
  const label = WINDOW_LABEL[window];
  const retryAfter = RETRY_AFTER_SECONDS[window];
  if (batchTooLarge) {
    const message = `Rate limit exceeded: this batch of ${count} traces is larger than the whole ${label} quota of ${quota}; split the batch`;
    return new BatchExceedsQuotaError(message, window, quota, retryAfter);
  }
  if (used === undefined) {
    const message = `Rate limit exceeded: the ${label} quota of ${quota} traces has no room for this batch of ${count}; retry after the Retry-After interval. ${retryAfterNote(window, retryAfter, at)}`;
    return new RateLimitedError(message, window, quota, retryAfter);
  }
  const remaining = Math.max(0, quota - used);
  const message =
    `Rate limit exceeded: the ${label} quota is ${quota} traces; ${used} are used and ${remaining} left, and this batch needs ${count}. ` +
    `Retry after the Retry-After interval${remaining > 0 ? `, or send at most ${remaining} traces now` : ''}. ${retryAfterNote(window, retryAfter, at)}`;
  return new RateLimitedError(message, window, quota, retryAfter, { used, remaining, requested: count });
}

async function giveBack(ports: { rateLimiter: RateLimiter; logger: IngestLogger }, orgId: string, counters: WindowCounter[], count: number, requestId: string) {
  try {
    await ports.rateLimiter.release(orgId, counters, count, requestId);
  } catch (error) {
    // The counters stay too high until their windows pass: the safe direction for a quota.
    ports.logger.error('Could not give back rate-window increments', { orgId, count, error: (error as Error).name });
  }
}
