import { formatMicros, parseTimestampMicros } from '../../../lambda/ingest/core/validation/timestamps.js';

/** What the contract says a timestamp means, computed independently: Date.parse to the ms, then the fraction's next 3 digits. */
function expected(text: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z$/.exec(text);
  if (!m) return undefined;
  const ms = Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}Z`);
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 19) !== text.slice(0, 19)) return undefined;
  return ms * 1000 + Number((m[7] ?? '').padEnd(6, '0').slice(0, 6));
}

describe('parseTimestampMicros', () => {
  // The same-minute shortcut runs only after a timestamp of that minute was parsed; each case runs after one.
  const minute = '2026-11-22T12:34';
  it.each([
    `${minute}:56Z`,
    `${minute}:56.1Z`,
    `${minute}:56.123456Z`,
    `${minute}:56.123456789Z`,
    `${minute}:00.000001Z`,
    `${minute}:59.999999Z`,
    `${minute}:60Z`,
    `${minute}:5Z`,
    `${minute}:56.Z`,
    `${minute}:56.1234567890Z`,
    `${minute}:5x.1Z`,
    `${minute}:56.12a4Z`,
    `${minute}:56+00:00`,
    `${minute}:56.5+01:00`,
    `${minute}:56`,
    `${minute}-56Z`,
    `${minute}:56.123Zx`,
    `${minute}:..Z`,
    `${minute}: -Z`,
    `${minute}:56x12Z`,
    `${minute}:56:123Z`,
  ])('reads %s as the full parser does, after a timestamp of its minute', (text) => {
    expect(parseTimestampMicros(`${minute}:00Z`)).toBe(expected(`${minute}:00Z`));
    const reference = text.endsWith('Z') ? expected(text) : undefined;
    const got = parseTimestampMicros(text);
    if (text.endsWith('Z')) expect(got).toBe(reference);
    else if (text.endsWith('+00:00')) expect(got).toBe(expected(`${text.slice(0, -6)}Z`));
    else if (text.endsWith('+01:00')) expect(got).toBe((expected(`${text.slice(0, -6)}Z`) as number) - 3_600_000_000);
    else if (text === `${minute}:56`) expect(got).toBe(expected(`${text}Z`));
    else expect(got).toBeUndefined();
  });

  it('does not carry a minute over to another minute', () => {
    expect(parseTimestampMicros('2026-11-22T12:34:00Z')).toBe(expected('2026-11-22T12:34:00Z'));
    expect(parseTimestampMicros('2026-11-22T12:35:07.5Z')).toBe(expected('2026-11-22T12:35:07.5Z'));
    expect(parseTimestampMicros('2026-02-30T12:35:07Z')).toBeUndefined();
    expect(parseTimestampMicros('2026-11-22T12:34:59.999999Z')).toBe(expected('2026-11-22T12:34:59.999999Z'));
  });
});

describe('formatMicros', () => {
  it.each([0, 1, 999_999, 1_000_000, 1_764_000_000_123_456, 1_764_000_000_999_999, 1_764_000_001_000_000, 4_102_444_799_999_999])(
    'writes %d as toISOString does, to the microsecond',
    (micros) => {
      const ms = Math.floor(micros / 1000);
      const reference = `${new Date(ms).toISOString().slice(0, 23)}${String(micros - ms * 1000).padStart(3, '0')}Z`;
      formatMicros(micros - 1); // a neighbour first: the per-second memo must not leak into the next second
      expect(formatMicros(micros)).toBe(reference);
      expect(parseTimestampMicros(formatMicros(micros))).toBe(micros);
    },
  );
});
