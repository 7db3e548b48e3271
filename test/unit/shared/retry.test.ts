import { retryWithBackoff } from '../../../lambda/shared/runtime/retry.js';

const policy = { maxAttempts: 4, baseDelayMs: 10, maxDelayMs: 40 };

function recorder() {
  const sleeps: number[] = [];
  return { sleeps, sleep: async (ms: number) => void sleeps.push(ms) };
}

const giveUp = (failure: unknown, attempts: number) => new Error(`gave up after ${attempts}: ${String(failure)}`);

describe('retryWithBackoff', () => {
  it('returns the first done value without sleeping', async () => {
    const { sleeps, sleep } = recorder();
    await expect(retryWithBackoff({ policy, sleep, giveUp }, async () => ({ done: 7 }))).resolves.toBe(7);
    expect(sleeps).toEqual([]);
  });

  it('retries failures and thrown errors, sleeping within the backoff ceiling before each retry', async () => {
    const { sleeps, sleep } = recorder();
    const seen: number[] = [];
    const value = await retryWithBackoff({ policy, sleep, giveUp }, async (attempt) => {
      seen.push(attempt);
      if (attempt === 1) throw new Error('boom');
      if (attempt === 2) return { failed: 'partial', retryable: true };
      return { done: 'ok' };
    });
    expect(value).toBe('ok');
    expect(seen).toEqual([1, 2, 3]);
    expect(sleeps).toHaveLength(2);
    expect(sleeps[0]).toBeLessThan(10);
    expect(sleeps[1]).toBeLessThan(20);
  });

  it('gives up with the last failure after maxAttempts', async () => {
    const { sleep } = recorder();
    let attempts = 0;
    const run = retryWithBackoff({ policy, sleep, giveUp }, async () => ({ failed: `f${++attempts}`, retryable: true }));
    await expect(run).rejects.toThrow('gave up after 4: f4');
  });

  it('stops at once on a failure that is not retryable', async () => {
    const { sleeps, sleep } = recorder();
    const run = retryWithBackoff({ policy, sleep, giveUp }, async () => ({ failed: 'definite', retryable: false }));
    await expect(run).rejects.toThrow('gave up after 1: definite');
    expect(sleeps).toEqual([]);
  });
});
