import { setTimeout as delay } from 'node:timers/promises';

/** Bounded exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"). */
export interface BackoffPolicy {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export type Sleep = (ms: number) => Promise<void>;

export const sleep: Sleep = (ms) => delay(ms);

/** Delay before retry number `retry` (1 for the first retry). */
export function backoffDelay(policy: BackoffPolicy, retry: number, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  return Math.floor(random() * ceiling);
}
