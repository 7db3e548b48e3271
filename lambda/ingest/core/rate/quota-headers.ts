import { WINDOW_LABEL } from '../../../shared/domain/rate-windows.js';
import type { RateWindow } from '../../../shared/domain/tenancy.js';

/** One window with a quota, as the answer reports it. */
export interface QuotaState {
  window: RateWindow;
  /** Traces allowed in the window. */
  quota: number;
  /** Length of the window in seconds (the calendar month's own length for `month`). */
  windowSeconds: number;
  /** Seconds until the window ends and its count starts again from 0. */
  resetSeconds: number;
  /** Traces left in the window, as far as is known; `undefined` when the counters could not be read. */
  remaining?: number;
}

/**
 * `RateLimit-Policy` and `RateLimit` as draft-ietf-httpapi-ratelimit-headers-11 (May 2026) defines
 * them: each a Structured Fields List of String items with parameters, one item per window that has a
 * quota, named `per-minute`, `per-hour`, `per-day`, `per-month`:
 *
 *   RateLimit-Policy: "per-minute";q=1000;w=60, "per-hour";q=20000;w=3600
 *   RateLimit: "per-minute";r=993;t=17, "per-hour";r=19870;t=2417
 *
 * `q` and `r` count traces, the unit the windows count (the draft's quota-unit registry has no unit
 * for the items of a batch, so `qu` is left out and the unit is documented in docs/api.md). `t` is
 * the seconds until the fixed window resets. `RateLimit` is left out when the counters could not be
 * read; no header at all when no window has a quota.
 * https://www.ietf.org/archive/id/draft-ietf-httpapi-ratelimit-headers-11.html
 */
export function rateLimitHeaders(states: readonly QuotaState[] | undefined): Record<string, string> {
  if (!states || states.length === 0) return {};
  const name = (state: QuotaState) => `"${WINDOW_LABEL[state.window]}"`;
  const headers: Record<string, string> = {
    'RateLimit-Policy': states.map((state) => `${name(state)};q=${state.quota};w=${state.windowSeconds}`).join(', '),
  };
  if (states.every((state) => state.remaining !== undefined)) {
    headers.RateLimit = states.map((state) => `${name(state)};r=${state.remaining};t=${state.resetSeconds}`).join(', ');
  }
  return headers;
}
