import { DecodedJson, DecodedTime, JsonOrText, type TraceDraft } from '../../../lambda/ingest/core/draft.js';
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
