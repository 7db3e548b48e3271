import { DecodedJson, DecodedTime, JsonOrText, type TraceDraft } from '../../../lambda/ingest/core/draft.js';
import { outsideDayOfClockMessage } from '../../../lambda/ingest/core/validation/timestamps.js';
import { validateDraft } from '../../../lambda/ingest/core/validation/validate-trace.js';
import type { JsonValue } from '../../../lambda/shared/domain/json.js';
import { iso, NOW_MICROS } from '../../../devkit/builders/trace-builders.js';

let counter = 0;
const newId = () => `00000000-0000-4000-8000-${String(++counter).padStart(12, '0')}`;
const HOUR_MICROS = 3_600_000_000;

/** A trace of one span whose members are `spanMembers` over a valid base; `rejects-trace`, as the JSON route sends. */
function draft(spanMembers: Record<string, unknown>, traceMembers: Record<string, unknown> = {}): TraceDraft {
  return {
    trace: { timestamp: iso(), ...traceMembers, spans: [{ timestamp: iso(), name: 'a', ...spanMembers }] },
    spansOnly: false,
    invalidSpan: 'rejects-trace',
  };
}

const outcome = (d: TraceDraft) => {
  const result = validateDraft(d, NOW_MICROS, newId);
  return result.ok ? { ok: true, span: result.trace.spans[0], trace: { ...result.trace, trace_id: '', spans: [] } } : { ok: false, issues: result.issues };
};

const nested = (depth: number): JsonValue => (depth === 0 ? 1 : [nested(depth - 1)]);

describe('a route\'s decoded members meet the rules a client\'s text meets (one set of rules for every draft)', () => {
  it.each<[string, JsonValue, string]>([
    ['attributes that are not an object', [1, 2], '[1,2]'],
    ['tags that are not a list of strings', { tags: [1] }, '{"tags":[1]}'],
    ['tags that are not a list at all', { tags: 'prod' }, '{"tags":"prod"}'],
    ['a tag holding a lone surrogate', { tags: ['\ud800'] }, '{"tags":["\\ud800"]}'],
    ['attributes nested deeper than the limit', { deep: nested(200) }, `{"deep":${JSON.stringify(nested(200))}}`],
  ])('rejects %s whether decoded or sent as text', (_, value, text) => {
    const decoded = outcome(draft({ attributes: new DecodedJson(value) }));
    const sent = outcome(draft({ attributes: text }));
    expect(decoded.ok).toBe(false);
    expect(decoded).toEqual(sent);
  });

  it('rejects decoded trace attributes that break a rule as it rejects the sent text', () => {
    const decoded = outcome(draft({}, { attributes: new DecodedJson({ tags: [true] }) }));
    expect(decoded).toEqual({ ok: false, issues: [{ path: '/attributes', code: 'invalid_tags', message: expect.any(String) }] });
    expect(decoded).toEqual(outcome(draft({}, { attributes: '{"tags":[true]}' })));
  });

  it('rejects a decoded input or output nested deeper than the limit as it rejects the sent text', () => {
    for (const member of ['input', 'output']) {
      const decoded = outcome(draft({ [member]: new DecodedJson(nested(200)) }));
      expect(decoded).toEqual({ ok: false, issues: [{ path: `/spans/0/${member}`, code: 'too_deep', message: expect.any(String) }] });
      expect(decoded).toEqual(outcome(draft({ [member]: JSON.stringify(nested(200)) })));
    }
  });

  it('stores a decoded value as the text a client would have sent for it, and lands the same trace', () => {
    const value = { tags: ['prod'], 'otel.span_id': 'abc', n: 1.5 };
    const span_id = '0af76519-16cd-43dd-8448-eb211c80319c';
    const decoded = outcome(draft({ span_id, attributes: new DecodedJson(value), input: new DecodedJson([{ role: 'user' }]) }, { attributes: new DecodedJson({ a: 1 }) }));
    const sent = outcome(draft({ span_id, attributes: JSON.stringify(value), input: '[{"role":"user"}]' }, { attributes: '{"a":1}' }));
    expect(decoded.ok).toBe(true);
    expect(decoded).toEqual(sent);
  });

  it('checks a decoded time against the clock as it checks a sent one, and stores it to the microsecond', () => {
    const late = NOW_MICROS + 25 * HOUR_MICROS;
    const decoded = outcome(draft({ timestamp: new DecodedTime(late) }));
    expect(decoded).toEqual({ ok: false, issues: [{ path: '/spans/0/timestamp', code: 'timestamp_out_of_range', message: expect.any(String) }] });
    expect(decoded).toEqual(outcome(draft({ timestamp: new Date(late / 1000).toISOString() })));
    const inTime = outcome(draft({}, { timestamp: new DecodedTime(NOW_MICROS + 123_456) }));
    expect(inTime).toMatchObject({ ok: true, trace: { timestamp: '2026-11-22T12:00:00.123456Z' } });
  });

  it('checks a decoded time of 0 (an OTLP span that never set its start) against the clock: a time, out of range', () => {
    expect(outcome(draft({ timestamp: new DecodedTime(0) }))).toEqual({
      ok: false,
      issues: [{ path: '/spans/0/timestamp', code: 'timestamp_out_of_range', message: outsideDayOfClockMessage(NOW_MICROS) }],
    });
  });

  it('refuses a decoded time that is no time at all (negative or not finite)', () => {
    for (const micros of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(outcome(draft({ timestamp: new DecodedTime(micros) }))).toEqual({
        ok: false,
        issues: [{ path: '/spans/0/timestamp', code: 'invalid_timestamp', message: expect.any(String) }],
      });
    }
  });
});

describe('a string a route has as sent, for a member stored as JSON text (JsonOrText)', () => {
  const stored = (text: string) => {
    const result = outcome(draft({ input: new JsonOrText(text) }));
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    return result.span?.input;
  };

  it('keeps JSON text as it was sent, byte for byte', () => {
    expect(stored(' [{"role": "user", "n": 1.0}]')).toBe(' [{"role": "user", "n": 1.0}]');
    expect(stored('"quoted"')).toBe('"quoted"');
    expect(stored('{"role": "user"}')).toBe('{"role": "user"}');
  });

  it('stores plain text, also text that only starts like JSON, as a JSON string holding it', () => {
    expect(stored('hello')).toBe('"hello"');
    expect(stored('42')).toBe('"42"');
    expect(stored('[INFO] started')).toBe('"[INFO] started"');
  });

  it('rejects JSON text nested deeper than the limit, as it rejects a client\'s', () => {
    const text = '['.repeat(200);
    expect(outcome(draft({ input: new JsonOrText(text) }))).toEqual(outcome(draft({ input: text })));
    expect(outcome(draft({ input: new JsonOrText(text) }))).toMatchObject({ ok: false, issues: [{ code: 'too_deep' }] });
  });
});

describe('a drops-span draft (the OTLP route\'s): an invalid span is left out and reported, the trace lands with the others', () => {
  const spanId = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
  /** Span `n` starts n seconds and n µs after the clock, so that each kept span's time is told apart. */
  const span = (n: number, members: Record<string, unknown> = {}) => ({ span_id: spanId(n), timestamp: new DecodedTime(NOW_MICROS + n * 1_000_001), name: `span-${n}`, ...members });
  const dropsSpan = (spans: unknown[], traceMembers: Record<string, unknown> = {}): TraceDraft => ({
    trace: { timestamp: new DecodedTime(NOW_MICROS), spans, ...traceMembers },
    spansOnly: false,
    invalidSpan: 'drops-span',
  });
  const validate = (spans: unknown[], traceMembers: Record<string, unknown> = {}) => validateDraft(dropsSpan(spans, traceMembers), NOW_MICROS, newId);
  const landed = (spans: unknown[]) => {
    const result = validate(spans);
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    return { spans: result.trace.spans.map((s) => `${s.name} ${s.span_id} ${s.timestamp}`), dropped: result.droppedSpans };
  };
  const KIND = 'must be one of llm, tool, chain, retriever, agent, custom';
  // Every member of a span wrong, strings too long and holding a lone surrogate: 25 issues, over the 20 a trace or span is answered with.
  const LONG = `${'x'.repeat(1025)}\ud800`;
  const wrecked = {
    span_id: 'x', parent_span_id: 'y', timestamp: 'soon', duration_ms: -1, name: LONG, kind: 'LLM', status: 'OK', model: LONG, input_tokens: -1,
    output_tokens: -1, total_tokens: -1, input: '{', output: '{', attributes: '[]', error_message: 5, session_id: LONG, agent_id: LONG, agent_name: LONG, user_id: LONG,
  };

  it('lands the other spans, each with its own time, and reports the dropped one by its index, its paths inside the span', () => {
    expect(landed([span(0, { kind: 'LLM', status: 'OK' }), span(1), span(2)])).toEqual({
      spans: [`span-1 ${spanId(1)} 2026-11-22T12:00:01.000001Z`, `span-2 ${spanId(2)} 2026-11-22T12:00:02.000002Z`],
      dropped: [{ spanIndex: 0, issues: [{ path: '/kind', code: 'invalid_enum', message: KIND }, { path: '/status', code: 'invalid_enum', message: 'must be one of ok, error, timeout' }] }],
    });
  });

  it('drops a span for a rule\'s issue as for the schema\'s, and a span that is not an object with the path ""', () => {
    const late = span(1, { timestamp: new DecodedTime(NOW_MICROS + 25 * HOUR_MICROS) });
    expect(landed([span(0), late, 5, span(3, { span_id: spanId(0) }), span(4)])).toEqual({
      spans: [`span-0 ${spanId(0)} 2026-11-22T12:00:00.000000Z`, `span-4 ${spanId(4)} 2026-11-22T12:00:04.000004Z`],
      dropped: [
        { spanIndex: 2, issues: [{ path: '', code: 'not_an_object', message: 'must be a JSON object' }] },
        { spanIndex: 1, issues: [{ path: '/timestamp', code: 'timestamp_out_of_range', message: outsideDayOfClockMessage(NOW_MICROS) }] },
        { spanIndex: 3, issues: [{ path: '/span_id', code: 'duplicate_span_id', message: 'repeats the span_id of /spans/0' }] },
      ],
    });
  });

  it('answers a dropped span with at most 20 issues', () => {
    const { spans, dropped } = landed([span(0), wrecked]);
    expect(spans).toHaveLength(1);
    expect(dropped).toHaveLength(1);
    expect(dropped[0]?.spanIndex).toBe(1);
    expect(dropped[0]?.issues).toHaveLength(20);
    expect(dropped[0]?.issues[0]).toEqual({ path: '/span_id', code: 'invalid_uuid', message: expect.any(String) });
  });

  it('rejects the trace for an issue of its own members, reporting the spans\' issues at their full paths', () => {
    expect(validate([span(0, { kind: 'LLM' }), span(1)], { status: 'OK' })).toEqual({
      ok: false,
      issues: [
        { path: '/status', code: 'invalid_enum', message: 'must be one of ok, error, timeout' },
        { path: '/spans/0/kind', code: 'invalid_enum', message: KIND },
      ],
    });
    expect(validate([span(0)], { spans: 'none' })).toMatchObject({ ok: false, issues: [{ path: '/spans', code: 'invalid_type' }] });
  });

  it('rejects the trace when no span is left', () => {
    expect(validate([span(0, { kind: 'LLM' }), 5])).toEqual({
      ok: false,
      issues: [
        { path: '/spans/0/kind', code: 'invalid_enum', message: KIND },
        { path: '/spans/1', code: 'not_an_object', message: 'must be a JSON object' },
      ],
    });
  });

  it('answers a rejected trace with at most 20 issues, whichever way it is rejected', () => {
    const noSpanLeft = validate([wrecked]);
    const ownMember = validate([span(0), wrecked], { status: 'OK' });
    expect(noSpanLeft).toMatchObject({ ok: false, issues: expect.any(Array) });
    expect(!noSpanLeft.ok && noSpanLeft.issues).toHaveLength(20);
    expect(!ownMember.ok && ownMember.issues).toHaveLength(20);
    expect(!ownMember.ok && ownMember.issues[0]).toEqual({ path: '/status', code: 'invalid_enum', message: expect.any(String) });
  });

  it('stores each kept span\'s own time when the spans hold sent text (offsets), after a span that is not an object and past the tenth', () => {
    // Span i starts i seconds after the clock, written at +01:00; span 1 is not an object, span 11 has a bad kind.
    const sent = (i: number) => ({ timestamp: `2026-11-22T13:00:${String(i).padStart(2, '0')}+01:00`, name: `span-${i}` });
    const spans = Array.from({ length: 13 }, (_, i) => (i === 1 ? 'x' : i === 11 ? { ...sent(i), kind: 'LLM' } : sent(i)));
    const result = validate(spans);
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    const kept = [0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12];
    expect(result.trace.spans.map((s) => `${s.name} ${s.timestamp}`)).toEqual(kept.map((i) => `span-${i} 2026-11-22T12:00:${String(i).padStart(2, '0')}.000000Z`));
    expect(result.droppedSpans).toEqual([
      { spanIndex: 1, issues: [{ path: '', code: 'not_an_object', message: 'must be a JSON object' }] },
      { spanIndex: 11, issues: [{ path: '/kind', code: 'invalid_enum', message: KIND }] },
    ]);
  });

  it('lands a valid trace whole, with nothing dropped', () => {
    expect(landed([span(0), span(1)])).toEqual({
      spans: [`span-0 ${spanId(0)} 2026-11-22T12:00:00.000000Z`, `span-1 ${spanId(1)} 2026-11-22T12:00:01.000001Z`],
      dropped: [],
    });
  });
});
