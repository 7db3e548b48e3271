/**
 * ISO 8601 timestamps as the contract accepts them (docs/contract.md §3): date, `T`, time, an optional
 * fraction of up to 9 digits kept to the microsecond, and `Z`, `±HH:MM` or no offset (UTC).
 */
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})?$/;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;

function daysIn(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return month === 2 && leap ? 29 : (DAYS_IN_MONTH[month - 1] ?? 0);
}

// Already UTC with at most six fraction digits (what SDKs send): normalized by padding alone.
const UTC_SHORT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?Z$/;

/**
 * The normalized form of a timestamp already known to be valid: UTC with six fraction digits.
 * Skips the date arithmetic for the common `Z` case; anything else goes through `formatMicros`.
 */
export function normalizeTimestamp(text: string, epochMicros: number): string {
  if (UTC_SHORT.test(text)) {
    const dot = text.indexOf('.', 19);
    return dot === -1 ? `${text.slice(0, 19)}.000000Z` : `${text.slice(0, dot + 1)}${text.slice(dot + 1, -1).padEnd(6, '0')}Z`;
  }
  return formatMicros(epochMicros);
}

// The minute of the last UTC timestamp parsed, `YYYY-MM-DDTHH:MM`, and its epoch milliseconds: the timestamps of
// a batch fall in a few minutes, so most skip the regular expression and the calendar checks.
let lastMinute = '';
let lastMinuteMs = 0;

const digit = (text: string, at: number): number => {
  const d = text.charCodeAt(at) - 0x30;
  return d >= 0 && d <= 9 ? d : NaN;
};

/** A timestamp in the minute of the previous one, `Z` and up to 9 fraction digits, or `undefined` to take the full path. */
function sameMinuteMicros(text: string): number | undefined {
  const length = text.length;
  if (length < 20 || text.charCodeAt(length - 1) !== 0x5a || !text.startsWith(lastMinute) || text.charCodeAt(16) !== 0x3a) return undefined;
  const second = digit(text, 17) * 10 + digit(text, 18);
  if (!(second <= 59)) return undefined;
  let micros = 0;
  if (length > 20) {
    // `.` then 1 to 9 digits, kept to the microsecond
    if (text.charCodeAt(19) !== 0x2e || length > 30 || length === 21) return undefined;
    for (let i = 20, scale = 100_000; i < length - 1; i++, scale /= 10) {
      const d = digit(text, i);
      if (Number.isNaN(d)) return undefined;
      if (scale >= 1) micros += d * scale;
    }
  }
  return (lastMinuteMs + second * 1000) * 1000 + micros;
}

/** Microseconds since the epoch, or `undefined` when the text is not a valid timestamp. */
export function parseTimestampMicros(text: string): number | undefined {
  if (lastMinute !== '') {
    const fast = sameMinuteMicros(text);
    if (fast !== undefined) return fast;
  }
  const m = TIMESTAMP.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, fraction = '', offset = 'Z'] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (offset !== 'Z') {
    const offsetHours = Number(offset.slice(1, 3));
    const offsetMins = Number(offset.slice(4, 6));
    if (offsetHours > 23 || offsetMins > 59) return undefined;
    offsetMinutes = (offsetHours * 60 + offsetMins) * (offset.startsWith('-') ? -1 : 1);
  }
  const epochMs = Date.UTC(year, month - 1, day, hour, minute - offsetMinutes, second);
  // Date.UTC maps years 0–99 to 1900–1999; such dates are far outside the accepted window anyway.
  const micros = Number(fraction.padEnd(6, '0').slice(0, 6));
  if (offset === 'Z') {
    lastMinute = text.slice(0, 16);
    lastMinuteMs = epochMs - second * 1000;
  }
  return epochMs * 1000 + micros;
}

// The second of the last timestamp formatted and its `YYYY-MM-DDTHH:MM:SS`: an export's spans fall in a few
// seconds, so most skip building a Date.
let lastSecond = Number.NaN;
let lastSecondText = '';

/** `2026-11-22T10:00:00.123456Z`: UTC with exactly six fractional digits. */
export function formatMicros(epochMicros: number): string {
  const second = Math.floor(epochMicros / 1_000_000);
  if (second !== lastSecond) {
    lastSecondText = new Date(second * 1000).toISOString().slice(0, 19);
    lastSecond = second;
  }
  return `${lastSecondText}.${String(epochMicros - second * 1_000_000).padStart(6, '0')}Z`;
}

const DAY_MICROS = 24 * 60 * 60 * 1_000_000;

/** True when a time is within 24 hours of the server clock: the window a trace or span timestamp must fall in (docs/contract.md §3). */
export const withinDayOfClock = (micros: number, nowMicros: number): boolean => Math.abs(micros - nowMicros) <= DAY_MICROS;

/** The `timestamp_out_of_range` message: it says what the server's clock read, so a client whose own clock is off sees by how much. */
export const outsideDayOfClockMessage = (nowMicros: number): string =>
  `must be within 24 hours of the server clock (server time ${formatMicros(nowMicros)}: accepted from ${formatMicros(nowMicros - DAY_MICROS)} to ${formatMicros(nowMicros + DAY_MICROS)}, bounds included)`;
