import type { Quotas, RateWindow } from './tenancy.js';
import { RATE_WINDOWS } from './tenancy.js';

/** `Retry-After` per window (docs/contract.md §2); where several windows overflow the largest applies. */
export const RETRY_AFTER_SECONDS: Record<RateWindow, number> = { minute: 60, hour: 3600, day: 86400, month: 86400 };

export const WINDOW_LABEL: Record<RateWindow, string> = {
  minute: 'per-minute',
  hour: 'per-hour',
  day: 'per-day',
  month: 'per-month',
};

/** One counter a batch increments: a UTC-aligned fixed window, keyed by its start. */
export interface WindowCounter {
  window: RateWindow;
  /** `2026-11-22T10:04Z`, `2026-11-22T10Z`, `2026-11-22`, `2026-11`. */
  windowStart: string;
  quota: number;
  /** Epoch seconds after which the item may be deleted: clean-up only, never the reset. */
  expiresAt: number;
}

const pad = (n: number) => String(n).padStart(2, '0');
const DAY_SECONDS = 86_400;

/** The fixed window that holds `at`: its start as the counter's key, and its end (the reset) in epoch seconds. */
export function windowBounds(window: RateWindow, at: Date): { start: string; endEpochSeconds: number } {
  const y = at.getUTCFullYear();
  const mo = at.getUTCMonth();
  const d = at.getUTCDate();
  const h = at.getUTCHours();
  const mi = at.getUTCMinutes();
  const date = `${y}-${pad(mo + 1)}-${pad(d)}`;
  switch (window) {
    case 'minute':
      return { start: `${date}T${pad(h)}:${pad(mi)}Z`, endEpochSeconds: Date.UTC(y, mo, d, h, mi + 1) / 1000 };
    case 'hour':
      return { start: `${date}T${pad(h)}Z`, endEpochSeconds: Date.UTC(y, mo, d, h + 1) / 1000 };
    case 'day':
      return { start: date, endEpochSeconds: Date.UTC(y, mo, d + 1) / 1000 };
    case 'month':
      return { start: `${y}-${pad(mo + 1)}`, endEpochSeconds: Date.UTC(y, mo + 1, 1) / 1000 };
  }
}

/** Whole seconds from `at` until the window that holds it resets: `t` of the `RateLimit` header. */
export function secondsUntilReset(window: RateWindow, at: Date): number {
  return Math.max(0, Math.ceil(windowBounds(window, at).endEpochSeconds - at.getTime() / 1000));
}

/** The counters a batch must increment at `at`: one per window that has a quota. */
export function countersFor(quotas: Quotas, at: Date): WindowCounter[] {
  const counters: WindowCounter[] = [];
  for (const window of RATE_WINDOWS) {
    const quota = quotas[window];
    if (quota === null) continue;
    const { start, endEpochSeconds } = windowBounds(window, at);
    // Kept a day past the window's end so a late give-back still finds its item.
    counters.push({ window, windowStart: start, quota, expiresAt: endEpochSeconds + DAY_SECONDS });
  }
  return counters;
}

/** Seconds the window that holds `at` lasts in all: fixed for minute, hour and day; the calendar month's own length. */
export function windowLengthSeconds(window: RateWindow, at: Date): number {
  if (window !== 'month') return RETRY_AFTER_SECONDS[window];
  const y = at.getUTCFullYear();
  const mo = at.getUTCMonth();
  return (Date.UTC(y, mo + 1, 1) - Date.UTC(y, mo, 1)) / 1000;
}

/** Of several overflowing windows, the one whose `Retry-After` is largest (the longer window on a tie). */
export function decisiveWindow<T extends { window: RateWindow }>(overflowing: readonly T[]): T | undefined {
  let best: T | undefined;
  for (const candidate of overflowing) {
    if (
      !best ||
      RETRY_AFTER_SECONDS[candidate.window] > RETRY_AFTER_SECONDS[best.window] ||
      (RETRY_AFTER_SECONDS[candidate.window] === RETRY_AFTER_SECONDS[best.window] &&
        RATE_WINDOWS.indexOf(candidate.window) > RATE_WINDOWS.indexOf(best.window))
    ) {
      best = candidate;
    }
  }
  return best;
}
