import { countersFor, decisiveWindow } from '../../../lambda/shared/domain/rate-windows.js';

const quotas = { minute: 10, hour: 100, day: 1000, month: 10000 };

describe('rate windows', () => {
  it('aligns the four windows to UTC and keys them by their start', () => {
    const counters = countersFor(quotas, new Date('2026-12-31T23:59:59.999Z'));
    expect(counters.map((c) => [c.window, c.windowStart])).toEqual([
      ['minute', '2026-12-31T23:59Z'],
      ['hour', '2026-12-31T23Z'],
      ['day', '2026-12-31'],
      ['month', '2026-12'],
    ]);
  });

  it('expires items a day after the window ends, for clean-up only', () => {
    const [minute, , , month] = countersFor(quotas, new Date('2026-02-10T10:00:30Z'));
    expect(minute?.expiresAt).toBe(Date.UTC(2026, 1, 10, 10, 1) / 1000 + 86400);
    expect(month?.expiresAt).toBe(Date.UTC(2026, 2, 1) / 1000 + 86400);
  });

  it('leaves out windows without a quota', () => {
    expect(countersFor({ ...quotas, hour: null, day: null }, new Date()).map((c) => c.window)).toEqual(['minute', 'month']);
  });

  it('picks the largest Retry-After, the longer window on a tie', () => {
    expect(decisiveWindow([{ window: 'minute' }, { window: 'hour' }])?.window).toBe('hour');
    expect(decisiveWindow([{ window: 'month' }, { window: 'day' }])?.window).toBe('month');
  });
});
