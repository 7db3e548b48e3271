import { countersFor, decisiveWindow, RETRY_AFTER_SECONDS, WINDOW_LABEL, windowBounds, windowLengthSeconds } from '../../../lambda/shared/domain/rate-windows.js';

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

  it('picks the same window in any order, and none of none', () => {
    expect(decisiveWindow([{ window: 'hour' }, { window: 'minute' }])?.window).toBe('hour');
    expect(decisiveWindow([{ window: 'day' }, { window: 'month' }])?.window).toBe('month');
    expect(decisiveWindow([{ window: 'day' }, { window: 'hour' }, { window: 'minute' }])?.window).toBe('day');
    expect(decisiveWindow([{ window: 'minute' }])?.window).toBe('minute');
    expect(decisiveWindow([])).toBeUndefined();
  });

  it('answers Retry-After per window and labels them as the RateLimit headers do', () => {
    expect(RETRY_AFTER_SECONDS).toEqual({ minute: 60, hour: 3600, day: 86400, month: 86400 });
    expect(WINDOW_LABEL).toEqual({ minute: 'per-minute', hour: 'per-hour', day: 'per-day', month: 'per-month' });
  });

  it('ends each window at the start of the next, across the end of a year', () => {
    const at = new Date('2026-12-31T23:59:59.999Z');
    const newYear = Date.UTC(2027, 0, 1) / 1000;
    expect(windowBounds('minute', at)).toEqual({ start: '2026-12-31T23:59Z', endEpochSeconds: newYear });
    expect(windowBounds('hour', at)).toEqual({ start: '2026-12-31T23Z', endEpochSeconds: newYear });
    expect(windowBounds('day', at)).toEqual({ start: '2026-12-31', endEpochSeconds: newYear });
    expect(windowBounds('month', at)).toEqual({ start: '2026-12', endEpochSeconds: newYear });
  });

  it('pads every field of a window start to two digits', () => {
    const at = new Date('2027-01-02T03:04:05Z');
    expect(['minute', 'hour', 'day', 'month'].map((w) => windowBounds(w as 'minute', at).start)).toEqual(['2027-01-02T03:04Z', '2027-01-02T03Z', '2027-01-02', '2027-01']);
    expect(windowBounds('minute', at).endEpochSeconds).toBe(Date.UTC(2027, 0, 2, 3, 5) / 1000);
    expect(windowBounds('hour', at).endEpochSeconds).toBe(Date.UTC(2027, 0, 2, 4) / 1000);
    expect(windowBounds('day', at).endEpochSeconds).toBe(Date.UTC(2027, 0, 3) / 1000);
    expect(windowBounds('month', at).endEpochSeconds).toBe(Date.UTC(2027, 1, 1) / 1000);
  });

  it('lasts a fixed length for minute, hour and day, and the calendar month\'s own for month', () => {
    const at = new Date('2028-02-15T12:00:00Z');
    expect(windowLengthSeconds('minute', at)).toBe(60);
    expect(windowLengthSeconds('hour', at)).toBe(3600);
    expect(windowLengthSeconds('day', at)).toBe(86400);
    expect(windowLengthSeconds('month', at)).toBe(29 * 86400);
    expect(windowLengthSeconds('month', new Date('2026-02-01T00:00:00Z'))).toBe(28 * 86400);
    expect(windowLengthSeconds('month', new Date('2026-12-31T23:59:59Z'))).toBe(31 * 86400);
    expect(windowLengthSeconds('month', new Date('2026-11-30T23:59:59Z'))).toBe(30 * 86400);
  });
});
