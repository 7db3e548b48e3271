import type { WindowUsageReader } from '../../../lambda/ingest/core/rate/ports.js';
import { ThrottledWindowUsage } from '../../../lambda/ingest/core/rate/window-usage-cache.js';
import { countersFor } from '../../../lambda/shared/domain/rate-windows.js';

const AT = new Date('2026-11-22T12:00:10Z');
const counters = countersFor({ minute: 100, hour: 1000, day: null, month: null }, AT);

describe('ThrottledWindowUsage', () => {
  it('reads an organization at most once per interval, adding what this container admitted in between', async () => {
    let reads = 0;
    const inner: WindowUsageReader = { read: async () => ({ minute: 10 + reads++, hour: 50 }) };
    let now = 0;
    const usage = new ThrottledWindowUsage(inner, 100, () => now);

    await expect(usage.read('acme', counters, 3)).resolves.toEqual({ minute: 10, hour: 50 });
    now = 60;
    await expect(usage.read('acme', counters, 2)).resolves.toEqual({ minute: 12, hour: 52 });
    await expect(usage.read('acme', counters, 5)).resolves.toEqual({ minute: 17, hour: 57 });
    expect(reads).toBe(1);

    now = 100;
    await expect(usage.read('acme', counters, 1)).resolves.toEqual({ minute: 11, hour: 50 });
    expect(reads).toBe(2);
  });

  it('keeps organizations and window starts apart', async () => {
    const read = jest.fn(async () => ({ minute: 1 }));
    const usage = new ThrottledWindowUsage({ read }, 100, () => 0);
    await usage.read('a', counters);
    await usage.read('b', counters);
    await usage.read('a', countersFor({ minute: 100, hour: 1000, day: null, month: null }, new Date('2026-11-22T12:01:10Z')));
    expect(read).toHaveBeenCalledTimes(3);
  });

  it('remembers at most maxEntries organizations, forgetting the one read longest ago (a fresh read makes one the newest)', async () => {
    const read = jest.fn(async (_orgId: string) => ({ minute: 1 }));
    let now = 0;
    const usage = new ThrottledWindowUsage({ read }, 100, () => now, 3);
    const readsAt = async (at: number, ...orgs: string[]) => {
      now = at;
      read.mockClear();
      for (const org of orgs) await usage.read(org, counters);
      return read.mock.calls.map(([org]) => org);
    };
    expect(await readsAt(0, 'a')).toEqual(['a']);
    expect(await readsAt(10, 'b')).toEqual(['b']);
    // a's interval has passed: read again, it is now newer than b.
    expect(await readsAt(100, 'a', 'c')).toEqual(['a', 'c']);
    // d makes a fourth: b, the one read longest ago, is forgotten inside its interval; a is not.
    expect(await readsAt(105, 'd', 'a', 'b')).toEqual(['d', 'b']);
  });
});
