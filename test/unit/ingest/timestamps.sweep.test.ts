import { formatMicros, normalizeTimestamp, parseTimestampMicros, withinDayOfClock } from '../../../lambda/ingest/core/validation/timestamps.js';

/*
 * parseTimestampMicros against an oracle written apart from it (docs/contract.md §3): a date-time is valid when
 * Date.UTC gives back the same calendar fields (no 30 February, no hour 24, a 29 February only in leap years),
 * the offset within ±23:59, the fraction 1 to 9 digits kept to the microsecond. Texts come in runs that share a
 * minute, so the parser's same-minute shortcut reads most of them, and between them texts of other forms.
 */

const pad = (value: number, width: number) => String(value).padStart(width, '0');

function oracle(text: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|([+-])(\d{2}):(\d{2}))?$/.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const at = new Date(Date.UTC(2000, month - 1, day, hour, minute, second));
  at.setUTCFullYear(year, month - 1, day);
  const same = at.getUTCFullYear() === year && at.getUTCMonth() === month - 1 && at.getUTCDate() === day && at.getUTCHours() === hour && at.getUTCMinutes() === minute && at.getUTCSeconds() === second;
  if (!same || hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (m[9] !== undefined) {
    const offsetHours = Number(m[10]);
    const offsetMins = Number(m[11]);
    if (offsetHours > 23 || offsetMins > 59) return undefined;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  return (at.getTime() - offsetMinutes * 60_000) * 1000 + Number((m[7] ?? '').padEnd(6, '0').slice(0, 6));
}

function* texts(): Generator<string> {
  let state = 20_261_122;
  const random = (n: number) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return (state >>> 8) % n;
  };
  const years = [1600, 1900, 1970, 1999, 2000, 2023, 2024, 2025, 2026, 2100, 2104, 2400];
  for (let run = 0; run < 400; run++) {
    const year = years[random(years.length)]!;
    const month = 1 + random(13); // 13 is invalid
    const day = random(4) === 0 ? 28 + random(4) : 1 + random(32); // month ends, and 0 and 32
    const hour = random(25); // 24 is invalid
    const minute = random(12) === 0 ? 60 : random(60);
    const minuteText = `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}T${pad(hour, 2)}:${pad(minute, 2)}`;
    for (let i = 0; i < 8; i++) {
      const second = random(10) === 0 ? 60 : random(60);
      const digits = random(12) === 0 ? 10 : random(10);
      const fraction = digits === 0 ? (random(8) === 0 ? '.' : '') : `.${Array.from({ length: digits }, () => random(10)).join('')}`;
      const offsets = ['Z', 'Z', 'Z', '', `+${pad(random(25), 2)}:${pad(random(61), 2)}`, `-${pad(random(24), 2)}:${pad(random(60), 2)}`];
      const secondText = random(16) === 0 ? `${random(10)}` : pad(second, 2);
      yield `${minuteText}:${secondText}${fraction}${offsets[random(offsets.length)]}`;
    }
    // Near misses of the form, in the same minute.
    const junk = ['x', ' ', 'Z', '0', '.'][random(5)]!;
    yield `${junk}${minuteText}:00Z`;
    yield `${minuteText}:00Z${junk}`;
    yield `${minuteText}:0${junk}Z`;
    yield `${minuteText}:00.1${junk}Z`;
    yield `${minuteText}-00Z`;
    yield `${minuteText}:00.Z`;
  }
}

describe('parseTimestampMicros', () => {
  it('reads every text as the calendar does, in runs of one minute and across them', () => {
    const wrong: string[] = [];
    let valid = 0;
    for (const text of texts()) {
      const expected = oracle(text);
      if (expected !== undefined) valid++;
      const got = parseTimestampMicros(text);
      if (got !== expected) wrong.push(`${text}: ${got}, expected ${expected}`);
      if (wrong.length === 10) break;
    }
    expect(wrong).toEqual([]);
    expect(valid).toBeGreaterThan(1_000);
  });

  it.each([
    ['2024-02-29T12:00:00Z', Date.UTC(2024, 1, 29, 12) * 1000],
    ['2000-02-29T12:00:00Z', Date.UTC(2000, 1, 29, 12) * 1000],
    ['2100-02-29T12:00:00Z', undefined],
    ['2026-02-29T12:00:00Z', undefined],
    ['2026-02-28T23:59:59.999999999Z', Date.UTC(2026, 1, 28, 23, 59, 59) * 1000 + 999_999],
    ['2026-04-31T00:00:00Z', undefined],
    ['2026-12-31T00:00:00Z', Date.UTC(2026, 11, 31) * 1000],
    ['2026-13-01T00:00:00Z', undefined],
    ['2026-00-01T00:00:00Z', undefined],
    ['2026-01-00T00:00:00Z', undefined],
    ['2026-11-22T12:00:00+23:59', (Date.UTC(2026, 10, 22, 12) - (23 * 60 + 59) * 60_000) * 1000],
    ['2026-11-22T12:00:00-23:59', (Date.UTC(2026, 10, 22, 12) + (23 * 60 + 59) * 60_000) * 1000],
    ['2026-11-22T12:00:00+24:00', undefined],
    ['2026-11-22T12:00:00+00:60', undefined],
    ['x2026-11-22T12:00:00Z', undefined],
    ['2026-11-22T12:00:00Zx', undefined],
  ])('%s', (text, micros) => {
    expect(parseTimestampMicros(text)).toBe(micros);
  });
});

describe('normalizeTimestamp', () => {
  it('writes every valid text in UTC with six fraction digits, as formatMicros writes its time', () => {
    const wrong: string[] = [];
    for (const text of texts()) {
      const micros = oracle(text);
      // Before 1970 and past 2255 a time is out of the accepted window and of exact doubles: left out.
      if (micros === undefined || micros < 0 || micros > Number.MAX_SAFE_INTEGER) continue;
      const normalized = normalizeTimestamp(text, micros);
      if (normalized !== formatMicros(micros) || normalized !== `${new Date(Math.floor(micros / 1000)).toISOString().slice(0, 23)}${pad(micros % 1000, 3)}Z`) wrong.push(`${text}: ${normalized}`);
      if (wrong.length === 10) break;
    }
    expect(wrong).toEqual([]);
  });
});

describe('withinDayOfClock', () => {
  it('holds exactly 24 hours either side of the clock', () => {
    const day = 24 * 3600 * 1_000_000;
    const now = 1_764_000_000_000_000;
    expect([now - day - 1, now - day, now, now + day, now + day + 1].map((micros) => withinDayOfClock(micros, now))).toEqual([false, true, true, true, false]);
  });
});
