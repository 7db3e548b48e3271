import type { WindowCounts, WindowUsageReader } from '../../../../../lambda/ingest/core/rate/ports.js';
import { QUOTA_READ_TIMEOUT_MS, readQuotaState } from '../../../../../lambda/ingest/core/rate/read-quota-state.js';
import { countersFor } from '../../../../../lambda/shared/domain/rate-windows.js';
import type { Quotas } from '../../../../../lambda/shared/domain/tenancy.js';

/** What every answer reports of the windows: quotas, lengths, resets, and what is left when the counters are read in time. */

// 2026-02-10T10:20:30.250Z: February 2026 has 28 days.
const AT_MS = Date.UTC(2026, 1, 10, 10, 20, 30, 250);
const arrival = { receivedAtMicros: AT_MS * 1000 + 999 };
const QUOTAS: Quotas = { minute: 100, hour: 1_000, day: 10_000, month: 100_000 };
const caller = (quotas: Quotas = QUOTAS) => ({ org: { orgId: 'acme' }, quotas });

function recordingLogger() {
  const warnings: unknown[][] = [];
  return { logger: { warn: (...args: unknown[]) => void warnings.push(args), error: () => undefined }, warnings };
}

const reader = (read: WindowUsageReader['read']): WindowUsageReader => ({ read });

describe('readQuotaState', () => {
  it('reports each window with a quota: its length, the seconds to its reset (rounded up) and what is left', async () => {
    const calls: unknown[][] = [];
    const { logger } = recordingLogger();
    const windowUsage = reader(async (...args) => (calls.push(args), { minute: 10, hour: 100, day: 1_000, month: 10_000 }));
    await expect(readQuotaState({ windowUsage, logger }, caller(), arrival, {}, 4)).resolves.toEqual([
      { window: 'minute', quota: 100, windowSeconds: 60, resetSeconds: 30, remaining: 90 },
      { window: 'hour', quota: 1_000, windowSeconds: 3_600, resetSeconds: 2_370, remaining: 900 },
      { window: 'day', quota: 10_000, windowSeconds: 86_400, resetSeconds: 49_170, remaining: 9_000 },
      { window: 'month', quota: 100_000, windowSeconds: 28 * 86_400, resetSeconds: 18 * 86_400 + 49_170, remaining: 90_000 },
    ]);
    expect(calls).toEqual([['acme', countersFor(QUOTAS, new Date(AT_MS)), 4]]);
  });

  it('prefers the exact counts it was given over the read, and never reports less than nothing left', async () => {
    const { logger } = recordingLogger();
    const windowUsage = reader(async () => ({ minute: 10, hour: 2_000 }));
    const states = await readQuotaState({ windowUsage, logger }, caller({ ...QUOTAS, day: null, month: null }), arrival, { minute: 99 });
    expect(states.map((s) => s.remaining)).toEqual([1, 0]);
  });

  it('reports a window with no counter yet as whole once read, and leaves remaining out when nothing is known', async () => {
    const { logger } = recordingLogger();
    const partial = await readQuotaState({ windowUsage: reader(async () => ({ minute: 0 })), logger }, caller(), arrival);
    expect(partial.map((s) => s.remaining)).toEqual([100, undefined, undefined, undefined]);
    const unread = await readQuotaState({ logger }, caller(), arrival, { hour: 1 });
    expect(unread.map((s) => s.remaining)).toEqual([undefined, 999, undefined, undefined]);
    expect(unread.every((s) => 'remaining' in s === (s.window === 'hour'))).toBe(true);
  });

  it('reports nothing, and reads nothing, when no window has a quota', async () => {
    const read = jest.fn(async (): Promise<WindowCounts> => ({}));
    const { logger } = recordingLogger();
    await expect(readQuotaState({ windowUsage: reader(read), logger }, caller({ minute: null, hour: null, day: null, month: null }), arrival)).resolves.toEqual([]);
    expect(read).not.toHaveBeenCalled();
  });

  it('resets a window at its end even a moment before it', async () => {
    const { logger } = recordingLogger();
    const lastMoment = { receivedAtMicros: Date.UTC(2026, 1, 10, 10, 20, 59, 999) * 1000 };
    const [minute] = await readQuotaState({ logger }, caller(), lastMoment);
    expect(minute?.resetSeconds).toBe(1);
  });

  it('answers without what is left, and warns, when the read fails', async () => {
    const { logger, warnings } = recordingLogger();
    const failing = reader(async () => Promise.reject(Object.assign(new Error('throttled'), { name: 'ThrottlingException' })));
    const states = await readQuotaState({ windowUsage: failing, logger }, caller(), arrival);
    expect(states.map((s) => s.remaining)).toEqual([undefined, undefined, undefined, undefined]);
    expect(warnings).toEqual([['Rate-window counters not read; answered without RateLimit', { orgId: 'acme', error: 'ThrottlingException' }]]);
  });

  describe('a read that is slow', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    it(`is waited for ${QUOTA_READ_TIMEOUT_MS} ms, then the answer goes without what is left, with a warning`, async () => {
      const { logger, warnings } = recordingLogger();
      let answered = false;
      const states = readQuotaState({ windowUsage: reader(() => new Promise<WindowCounts>(() => undefined)), logger }, caller(), arrival).then((s) => {
        answered = true;
        return s;
      });
      await jest.advanceTimersByTimeAsync(QUOTA_READ_TIMEOUT_MS - 1);
      expect(answered).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      expect(answered).toBe(true);
      expect((await states).map((s) => s.remaining)).toEqual([undefined, undefined, undefined, undefined]);
      expect(warnings).toEqual([['Rate-window counters not read in time; answered without RateLimit', { orgId: 'acme' }]]);
      expect(QUOTA_READ_TIMEOUT_MS).toBe(250);
    });

    it('leaves no timer behind when the read answers in time', async () => {
      const { logger, warnings } = recordingLogger();
      await readQuotaState({ windowUsage: reader(async () => ({ minute: 1 })), logger }, caller(), arrival);
      expect(jest.getTimerCount()).toBe(0);
      expect(warnings).toEqual([]);
    });
  });
});
