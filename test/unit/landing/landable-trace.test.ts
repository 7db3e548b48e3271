import { UnlandableRecordError, timestampMicros, toLandableTrace } from '../../../lambda/landing/landable-trace.js';
import { acceptedSpan, acceptedTrace, traceContext } from '../../../devkit/builders/landing-builders.js';

describe('timestampMicros', () => {
  it.each([
    ['2026-11-22T10:00:00Z', 1_795_341_600_000_000n],
    ['2026-11-22T10:00:00.1Z', 1_795_341_600_100_000n],
    ['2026-11-22T10:00:59.123456Z', 1_795_341_659_123_456n],
    ['2026-11-22T10:00:59.123456789Z', 1_795_341_659_123_456n],
    ['1970-01-01T00:00:00.000001Z', 1n],
    ['9999-12-31T23:59:59.999999Z', 253_402_300_799_999_999n],
  ])('reads %s', (value, micros) => {
    expect(timestampMicros(value, '/t')).toBe(micros);
  });

  it('parses each minute afresh when consecutive values change minute', () => {
    expect(timestampMicros('2026-11-22T10:00:30Z', '/t')).toBe(1_795_341_630_000_000n);
    expect(timestampMicros('2026-11-22T10:01:30Z', '/t')).toBe(1_795_341_690_000_000n);
    expect(timestampMicros('2026-11-23T10:01:30Z', '/t')).toBe(1_795_428_090_000_000n);
  });

  // The reason is logged and written into the dead letter: it names the value by type and size, never quotes it.
  it.each([
    ['2026-11-22T10:00:60Z', 'a string of 20 characters'],
    ['2026-13-22T10:00:00Z', 'a string of 20 characters'],
    ['2026-11-22T10:00:00+01:00', 'a string of 25 characters'],
    ['2026-11-22 10:00:00Z', 'a string of 20 characters'],
    ['2026-11-22T10:00:00.Z', 'a string of 21 characters'],
    ['2026-11-22T10:00:00.1234567890Z', 'a string of 31 characters'],
    [42, 'a number'],
    [null, 'null'],
    // JSON.stringify would overflow the stack on it, and String() throw a TypeError: neither is a reason.
    [JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`), 'an array of 1 item'],
    [JSON.parse('{"toString": 1}'), 'an object'],
  ])('rejects %p, also right after a valid value of the same minute', (value, described) => {
    timestampMicros('2026-11-22T10:00:00Z', '/t');
    expect(() => timestampMicros(value, '/spans/3/timestamp')).toThrow(new UnlandableRecordError(`/spans/3/timestamp is not a UTC timestamp: ${described}`));
  });
});

describe('toLandableTrace', () => {
  it.each([
    [{ name: 3 }, '/spans/1/name is not a string'],
    [{ parent_span_id: 5 }, '/spans/1/parent_span_id is neither a string nor null'],
    [{ duration_ms: Infinity }, '/spans/1/duration_ms is not a finite number'],
    [{ total_tokens: 1.5 }, '/spans/1/total_tokens is not a safe integer'],
    [{ attributes: { tags: ['a'] } }, '/spans/1/attributes is not a string'],
  ])('names the first problem of a span %p by its path', (overrides, reason) => {
    const trace = acceptedTrace();
    trace.spans[1] = acceptedSpan(overrides as never, 1);
    expect(() => toLandableTrace(traceContext(), trace)).toThrow(new UnlandableRecordError(reason));
  });

  it('rejects a span that is not an object and bad trace numbers', () => {
    const trace = acceptedTrace();
    (trace.spans as unknown[])[0] = null;
    expect(() => toLandableTrace(traceContext(), trace)).toThrow('/spans/0 is not an object');
    expect(() => toLandableTrace(traceContext(), acceptedTrace({ input_tokens: 2 ** 60 }))).toThrow('/input_tokens is not a safe integer');
    expect(() => toLandableTrace(traceContext(), acceptedTrace({ environment: 5 } as never))).toThrow(new UnlandableRecordError('/environment is not a string'));
    expect(() => toLandableTrace(traceContext(), acceptedTrace({ spans: [] }))).not.toThrow();
  });
});
