import { backoffDelay, type BackoffPolicy, type Sleep, sleep as realSleep } from './backoff.js';

/** What one attempt came to: a value that ends the retries, or a failure. */
export type AttemptOutcome<T> = { done: T } | { failed: unknown; retryable: boolean };

export interface RetryOptions {
  policy: BackoffPolicy;
  sleep?: Sleep;
  /** Delay before retry number `retry`; backoff with full jitter from `policy` by default. */
  delay?: (retry: number) => number;
  /** The error thrown when the attempts run out or a failure is not retryable. */
  giveUp: (lastFailure: unknown, attempts: number) => Error;
}

/**
 * Runs `attempt` up to `policy.maxAttempts` times with backoff and full jitter between attempts.
 * An attempt that throws counts as a retryable failure; a non-retryable one ends the retries at once.
 */
export async function retryWithBackoff<T>(options: RetryOptions, attempt: (attemptNumber: number) => Promise<AttemptOutcome<T>>): Promise<T> {
  const sleep = options.sleep ?? realSleep;
  let lastFailure: unknown;
  for (let attemptNumber = 1; attemptNumber <= options.policy.maxAttempts; attemptNumber++) {
    if (attemptNumber > 1) await sleep(options.delay ? options.delay(attemptNumber - 1) : backoffDelay(options.policy, attemptNumber - 1));
    let outcome: AttemptOutcome<T>;
    try {
      outcome = await attempt(attemptNumber);
    } catch (error) {
      outcome = { failed: error, retryable: true };
    }
    if ('done' in outcome) return outcome.done;
    lastFailure = outcome.failed;
    if (!outcome.retryable) throw options.giveUp(lastFailure, attemptNumber);
  }
  throw options.giveUp(lastFailure, options.policy.maxAttempts);
}
