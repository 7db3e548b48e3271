import { BatchExceedsQuotaError, RateLimitedError } from '../../../../../lambda/ingest/core/errors.js';
import type { FullWindow, RateDecision, RateLimiter } from '../../../../../lambda/ingest/core/rate/ports.js';
import { reserveRateWindows } from '../../../../../lambda/ingest/core/rate/reserve-rate-windows.js';
import { countersFor } from '../../../../../lambda/shared/domain/rate-windows.js';
import type { Quotas } from '../../../../../lambda/shared/domain/tenancy.js';

/** Check 9 over a recording fake of its port: the counters it reserves, the 429s it answers, what it gives back. */

const AT = new Date(Date.UTC(2026, 10, 22, 10, 4, 30));
const QUOTAS: Quotas = { minute: 100, hour: 1_000, day: null, month: 100_000 };
const arrival = { requestId: 'req-1', receivedAtMicros: AT.getTime() * 1000 + 999 };
const caller = (quotas: Quotas = QUOTAS) => ({ org: { orgId: 'acme' }, quotas });

function fakeLimiter(answer: () => Promise<RateDecision>, release: () => Promise<void> = async () => undefined) {
  const calls: unknown[][] = [];
  const errors: unknown[][] = [];
  const rateLimiter: RateLimiter = {
    reserve: async (...args) => (calls.push(['reserve', ...args]), answer()),
    release: async (...args) => (calls.push(['release', ...args]), release()),
  };
  const logger = { warn: () => undefined, error: (...args: unknown[]) => void errors.push(args) };
  return { ports: { rateLimiter, logger }, calls, errors };
}

const full = (window: FullWindow['window'], used?: number): FullWindow => {
  const counter = countersFor(QUOTAS, AT).find((c) => c.window === window);
  if (!counter) throw new Error(`no ${window} counter`);
  return used === undefined ? counter : { ...counter, used };
};

async function refusal(work: Promise<unknown>): Promise<Record<string, unknown>> {
  const error = (await work.catch((e: unknown) => e)) as RateLimitedError;
  return { type: error.constructor.name, status: error.status, code: error.code, message: error.message, window: error.window, limit: error.limit, retryAfter: error.retryAfterSeconds, usage: error.usage };
}

describe('reserveRateWindows', () => {
  it('reserves the batch in every window with a quota, at the arrival\'s millisecond, under the request id', async () => {
    const { ports, calls } = fakeLimiter(async () => ({ allowed: true }));
    await reserveRateWindows(ports, caller(), arrival, 7);
    expect(calls).toEqual([['reserve', 'acme', countersFor(QUOTAS, AT), 7, 'req-1']]);
  });

  it('gives back the whole batch, or the part asked for, under the request id and the same counters', async () => {
    const { ports, calls } = fakeLimiter(async () => ({ allowed: true }));
    const reservation = await reserveRateWindows(ports, caller(), arrival, 7);
    await reservation.giveBack();
    await reservation.giveBack(3);
    expect(calls.slice(1)).toEqual([
      ['release', 'acme', countersFor(QUOTAS, AT), 7, 'req-1'],
      ['release', 'acme', countersFor(QUOTAS, AT), 3, 'req-1'],
    ]);
  });

  it('logs a give-back that fails and does not throw: the counters stay too high, the safe direction', async () => {
    const { ports, errors } = fakeLimiter(
      async () => ({ allowed: true }),
      async () => Promise.reject(Object.assign(new Error('timeout'), { name: 'TimeoutError' })),
    );
    const reservation = await reserveRateWindows(ports, caller(), arrival, 7);
    await expect(reservation.giveBack(2)).resolves.toBeUndefined();
    expect(errors).toEqual([['Could not give back rate-window increments', { orgId: 'acme', count: 2, error: 'TimeoutError' }]]);
  });

  it('refuses 429 batch_exceeds_quota, without reserving, a batch larger than a whole quota; the longest such window decides', async () => {
    const { ports, calls } = fakeLimiter(async () => ({ allowed: true }));
    expect(await refusal(reserveRateWindows(ports, caller(), arrival, 1_001))).toEqual({
      type: BatchExceedsQuotaError.name,
      status: 429,
      code: 'batch_exceeds_quota',
      message: 'Rate limit exceeded: this batch of 1001 traces is larger than the whole per-hour quota of 1000; split the batch',
      window: 'hour',
      limit: 1_000,
      retryAfter: 3600,
      usage: undefined,
    });
    expect(calls).toEqual([]);
  });

  it('reserves a batch exactly the size of the smallest quota', async () => {
    const { ports, calls } = fakeLimiter(async () => ({ allowed: true }));
    await reserveRateWindows(ports, caller(), arrival, 100);
    expect(calls).toHaveLength(1);
  });

  it('refuses 429 with what is used and left when the store returned the full window\'s count', async () => {
    const { ports } = fakeLimiter(async () => ({ allowed: false, overflowing: [full('minute', 95)] }));
    expect(await refusal(reserveRateWindows(ports, caller(), arrival, 7))).toEqual({
      type: RateLimitedError.name,
      status: 429,
      code: 'rate_limited',
      message:
        'Rate limit exceeded: the per-minute quota is 100 traces; 95 are used and 5 left, and this batch needs 7. Retry after the Retry-After interval, or send at most 5 traces now. ' +
        'Retry-After is 60 s on every per-minute refusal, as the API contract fixes it; the window itself resets in 30 s (t in RateLimit)',
      window: 'minute',
      limit: 100,
      retryAfter: 60,
      usage: { used: 95, remaining: 5, requested: 7 },
    });
  });

  it('says nothing of sending fewer when nothing is left, and never a negative remainder', async () => {
    const { ports } = fakeLimiter(async () => ({ allowed: false, overflowing: [full('minute', 100)] }));
    const answer = await refusal(reserveRateWindows(ports, caller(), arrival, 7));
    expect(answer.message).toBe(
      'Rate limit exceeded: the per-minute quota is 100 traces; 100 are used and 0 left, and this batch needs 7. Retry after the Retry-After interval. ' +
        'Retry-After is 60 s on every per-minute refusal, as the API contract fixes it; the window itself resets in 30 s (t in RateLimit)',
    );
    expect(answer.usage).toEqual({ used: 100, remaining: 0, requested: 7 });
    const { ports: over } = fakeLimiter(async () => ({ allowed: false, overflowing: [full('minute', 103)] }));
    expect((await refusal(reserveRateWindows(over, caller(), arrival, 7))).usage).toEqual({ used: 103, remaining: 0, requested: 7 });
  });

  it('refuses 429 without counts when the store did not return them; of several full windows the longest decides', async () => {
    const { ports } = fakeLimiter(async () => ({ allowed: false, overflowing: [full('minute', 99), full('month')] }));
    expect(await refusal(reserveRateWindows(ports, caller(), arrival, 7))).toEqual({
      type: RateLimitedError.name,
      status: 429,
      code: 'rate_limited',
      message:
        'Rate limit exceeded: the per-month quota of 100000 traces has no room for this batch of 7; retry after the Retry-After interval. ' +
        'Retry-After is 86400 s on every per-month refusal, as the API contract fixes it; the window itself resets in 741330 s (t in RateLimit)',
      window: 'month',
      limit: 100_000,
      retryAfter: 86_400,
      usage: undefined,
    });
  });

  it('says the window resets in 1 s when refused half a second before the minute ends, beside the contract\'s Retry-After of 60', async () => {
    const { ports } = fakeLimiter(async () => ({ allowed: false, overflowing: [full('minute', 100)] }));
    const late = { requestId: 'req-2', receivedAtMicros: Date.UTC(2026, 10, 22, 10, 4, 59, 500) * 1000 };
    const answer = await refusal(reserveRateWindows(ports, caller(), late, 7));
    expect(answer.retryAfter).toBe(60);
    expect(answer.message).toMatch(/Retry-After is 60 s on every per-minute refusal, as the API contract fixes it; the window itself resets in 1 s \(t in RateLimit\)$/);
  });

  it('answers 503 when the store fails, after giving back what may have been applied with only its answer lost', async () => {
    const cause = new Error('socket hang up');
    const { ports, calls } = fakeLimiter(async () => Promise.reject(cause));
    const error = await reserveRateWindows(ports, caller(), arrival, 7).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 503, code: 'unavailable', cause });
    expect(calls.map(([method, , , count]) => `${String(method)} ${String(count)}`)).toEqual(['reserve 7', 'release 7']);
  });
});
