import { validateTrace } from '../../../lambda/ingest/core/validation/validate-trace.js';
import { MAX_SPANS_PER_TRACE } from '../../../lambda/ingest/core/validation/issue-codes.js';
import { checkTraceRules } from '../../../lambda/ingest/core/validation/trace-rules.js';
import { buildSpan, buildTrace, iso, NOW_MICROS } from '../../../devkit/builders/trace-builders.js';

let counter = 0;
const newId = () => `00000000-0000-4000-8000-${String(++counter).padStart(12, '0')}`;
const check = (trace: unknown) => validateTrace(trace, NOW_MICROS, newId);
const issuesOf = (trace: unknown) => {
  const result = check(trace);
  if (result.ok) throw new Error('expected the trace to be rejected');
  return result.issues.map((issue) => [issue.path, issue.code]);
};

describe('per-trace validation (docs/contract.md §3)', () => {
  it('accepts a realistic trace', () => {
    expect(check(buildTrace()).ok).toBe(true);
  });

  it('applies every default and treats null as the default', () => {
    const result = check({ timestamp: iso(), environment: null, status: null, spans: [{ timestamp: iso(), name: 'a', kind: null, input_tokens: null }] });
    expect(result).toEqual({
      ok: true,
      droppedSpans: [],
      trace: {
        trace_id: expect.any(String), timestamp: '2026-11-22T12:00:00.000000Z', environment: 'default', workspace_slug: '',
        duration_ms: 0, root_span_name: '', status: 'ok', model: '', input_tokens: 0, output_tokens: 0, total_tokens: 0,
        attributes: '{}', session_id: '', agent_id: '', agent_name: '', user_id: '',
        spans: [{
          span_id: expect.any(String), parent_span_id: null, timestamp: '2026-11-22T12:00:00.000000Z', duration_ms: 0, name: 'a',
          kind: 'llm', status: 'ok', model: '', input_tokens: 0, output_tokens: 0, total_tokens: 0, input: '', output: '',
          attributes: '{}', error_message: null, session_id: '', agent_id: '', agent_name: '', user_id: '',
        }],
      },
    });
  });

  it('ignores unknown members, including __proto__, and copies none of them', () => {
    const trace = JSON.parse(`{"timestamp":"${iso()}","__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}},"extra":1}`);
    const result = check(trace);
    expect(result.ok).toBe(true);
    if (result.ok) expect(Object.keys(result.trace)).not.toContain('extra');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    [{ timestamp: undefined }, '/timestamp', 'required'],
    [{ timestamp: null }, '/timestamp', 'required'],
    [{ spans: [{ timestamp: iso() }] }, '/spans/0/name', 'required'],
    [{ spans: [{ timestamp: iso(), name: null }] }, '/spans/0/name', 'required'],
    [{ input_tokens: '5' }, '/input_tokens', 'invalid_type'],
    [{ input_tokens: 1.5 }, '/input_tokens', 'invalid_type'],
    [{ duration_ms: '1' }, '/duration_ms', 'invalid_type'],
    [{ duration_ms: -1 }, '/duration_ms', 'out_of_range'],
    [{ output_tokens: -1 }, '/output_tokens', 'out_of_range'],
    [{ total_tokens: 2 ** 53 }, '/total_tokens', 'out_of_range'],
    [{ status: 'OK' }, '/status', 'invalid_enum'],
    [{ spans: [buildSpan({ kind: 'LLM' })] }, '/spans/0/kind', 'invalid_enum'],
    [{ spans: [buildSpan({ status: 'failed' })] }, '/spans/0/status', 'invalid_enum'],
    [{ trace_id: 'not-a-uuid' }, '/trace_id', 'invalid_uuid'],
    [{ trace_id: 5 }, '/trace_id', 'invalid_type'],
    [{ spans: [buildSpan({ span_id: '1234' })] }, '/spans/0/span_id', 'invalid_uuid'],
    [{ spans: [buildSpan({ parent_span_id: 'x' })] }, '/spans/0/parent_span_id', 'invalid_uuid'],
    [{ timestamp: '2026-11-22 12:00:00Z' }, '/timestamp', 'invalid_timestamp'],
    [{ timestamp: '2026-02-30T12:00:00Z' }, '/timestamp', 'invalid_timestamp'],
    [{ timestamp: '2026-11-22T24:00:00Z' }, '/timestamp', 'invalid_timestamp'],
    [{ timestamp: '2026-11-22T12:00:00+25:00' }, '/timestamp', 'invalid_timestamp'],
    [{ timestamp: '2026-11-22T12:00:00.1234567890Z' }, '/timestamp', 'invalid_timestamp'],
    [{ timestamp: iso(24 * 3600 * 1000 + 1) }, '/timestamp', 'timestamp_out_of_range'],
    [{ timestamp: iso(-24 * 3600 * 1000 - 1) }, '/timestamp', 'timestamp_out_of_range'],
    [{ spans: [buildSpan({ timestamp: '2020-01-01T00:00:00Z' })] }, '/spans/0/timestamp', 'timestamp_out_of_range'],
    [{ spans: [buildSpan({ input: '{not json' })] }, '/spans/0/input', 'not_json_string'],
    [{ spans: [buildSpan({ output: 'plain text' })] }, '/spans/0/output', 'not_json_string'],
    [{ spans: [buildSpan({ input: { role: 'user' } })] }, '/spans/0/input', 'invalid_type'],
    [{ attributes: { a: 1 } }, '/attributes', 'invalid_type'],
    [{ attributes: '[1,2]' }, '/attributes', 'not_json_object'],
    [{ attributes: 'nope' }, '/attributes', 'not_json_string'],
    [{ attributes: '{"tags":"prod"}' }, '/attributes', 'invalid_tags'],
    [{ spans: [buildSpan({ attributes: '{"tags":[1]}' })] }, '/spans/0/attributes', 'invalid_tags'],
    [{ model: 'm'.repeat(1025) }, '/model', 'too_long'],
    [{ spans: [buildSpan({ name: 'n'.repeat(1025) })] }, '/spans/0/name', 'too_long'],
    [{ spans: 'none' }, '/spans', 'invalid_type'],
    [{ spans: [5] }, '/spans/0', 'not_an_object'],
  ])('rejects %p at %s with code %s', (overrides, path, code) => {
    const trace = { ...buildTrace(), ...overrides };
    if ('timestamp' in overrides && overrides.timestamp === undefined) delete (trace as Record<string, unknown>).timestamp;
    expect(issuesOf(trace)).toContainEqual([path, code]);
  });

  it.each([
    [
      '"input": {"q": "hi"}',
      { spans: [buildSpan({ input: { q: 'hi' } })] },
      { path: '/spans/0/input', code: 'invalid_type', message: String.raw`must be a string holding JSON text, not an object: send JSON.stringify(value) (Python: json.dumps(value))` },
    ],
    [
      '"output": "hello"',
      { spans: [buildSpan({ output: 'hello' })] },
      { path: '/spans/0/output', code: 'not_json_string', message: String.raw`must be a string holding JSON text, or "": plain text is not JSON (this is a string of 5 characters); to store text, send JSON.stringify(value) (Python: json.dumps(value))` },
    ],
    [
      '"attributes": {"tags": ["prod"]}',
      { attributes: { tags: ['prod'] } },
      { path: '/attributes', code: 'invalid_type', message: String.raw`must be a string holding a JSON object, not an object: send JSON.stringify(value) (Python: json.dumps(value))` },
    ],
    [
      'an array in output',
      { spans: [buildSpan({ output: ['x'.repeat(100)] })] },
      { path: '/spans/0/output', code: 'invalid_type', message: 'must be a string holding JSON text, not an array of 1 item: send JSON.stringify(value) (Python: json.dumps(value))' },
    ],
  ])('answers the first mistake %s with what to send instead, keeping the contract code', (_mistake, overrides, issue) => {
    const result = check({ ...buildTrace(), ...overrides });
    expect(result.ok ? [] : result.issues).toEqual([issue]);
  });

  it('accepts both bounds of the ±24 h window', () => {
    expect(check(buildTrace({ timestamp: iso(24 * 3600 * 1000) })).ok).toBe(true);
    expect(check(buildTrace({ timestamp: iso(-24 * 3600 * 1000) })).ok).toBe(true);
  });

  it('accepts offsets, no offset as UTC, and keeps nine fraction digits to the microsecond', () => {
    const result = check(buildTrace({ timestamp: '2026-11-22T13:30:00.123456789+01:30', spans: [buildSpan({ timestamp: '2026-11-22T12:00:00' })] }));
    expect(result.ok && result.trace.timestamp).toBe('2026-11-22T12:00:00.123456Z');
    expect(result.ok && result.trace.spans[0]?.timestamp).toBe('2026-11-22T12:00:00.000000Z');
  });

  it.each([
    ['2026-11-22T12:00:00Z', '2026-11-22T12:00:00.000000Z'],
    ['2026-11-22T12:00:00.5Z', '2026-11-22T12:00:00.500000Z'],
    ['2026-11-22T12:00:00.123456Z', '2026-11-22T12:00:00.123456Z'],
    ['2026-11-22T12:00:00.1234567Z', '2026-11-22T12:00:00.123456Z'],
    ['2026-11-22T11:00:00.25-01:00', '2026-11-22T12:00:00.250000Z'],
  ])('normalizes %s to %s', (sent, stored) => {
    const result = check(buildTrace({ timestamp: sent }));
    expect(result.ok && result.trace.timestamp).toBe(stored);
  });

  it('stores ids lower-case and rejects duplicate span ids case-insensitively', () => {
    const id = 'ABCDEF01-2345-4678-9ABC-DEF012345678';
    const accepted = check(buildTrace({ trace_id: id, spans: [buildSpan({ span_id: id })] }));
    expect(accepted.ok && accepted.trace.trace_id).toBe(id.toLowerCase());
    expect(issuesOf(buildTrace({ spans: [buildSpan({ span_id: id }), buildSpan({ span_id: id.toLowerCase() })] }))).toContainEqual([
      '/spans/1/span_id',
      'duplicate_span_id',
    ]);
  });

  it('rejects a span that is its own parent and allows a parent outside the batch', () => {
    const id = '11111111-2222-4333-8444-555555555555';
    expect(issuesOf(buildTrace({ spans: [buildSpan({ span_id: id, parent_span_id: id })] }))).toContainEqual(['/spans/0/parent_span_id', 'invalid_parent']);
    expect(check(buildTrace({ spans: [buildSpan({ parent_span_id: '99999999-2222-4333-8444-555555555555' })] })).ok).toBe(true);
  });

  it('accepts "" for input, output and attributes, and error_message of any length', () => {
    expect(check(buildTrace({ attributes: '', spans: [buildSpan({ input: '', output: '', attributes: '', error_message: 'e'.repeat(5000) })] })).ok).toBe(true);
  });

  it('reports at most 20 issues per trace', () => {
    const spans = Array.from({ length: 30 }, () => buildSpan({ kind: 'bad' }));
    const result = check(buildTrace({ spans }));
    expect(!result.ok && result.issues).toHaveLength(20);
  });

  it('rejects a trace that is not an object', () => {
    for (const value of [null, 5, 'x', [], true]) expect(issuesOf(value)).toEqual([['', 'not_an_object']]);
  });
});

describe('faithful or refused: lone surrogates and bounded spans (issue 14)', () => {
  it.each([
    ['a span name', { name: 'a\ud800b' }, '/spans/0/name'],
    ['a span model', { model: '\udc00' }, '/spans/0/model'],
    ['an error message', { error_message: 'x\ud83d' }, '/spans/0/error_message'],
    ['the JSON text of input', { input: '"\ud800"' }, '/spans/0/input'],
  ])('refuses a lone surrogate in %s with lone_surrogate, never replacing it', (_, span, path) => {
    expect(issuesOf(buildTrace({ spans: [buildSpan(span)] }))).toEqual([[path, 'lone_surrogate']]);
  });

  it('refuses a lone surrogate in a trace member and in a tag, which leaves the JSON text as UTF-8', () => {
    expect(issuesOf(buildTrace({ agent_name: '\ud800' }))).toEqual([['/agent_name', 'lone_surrogate']]);
    expect(issuesOf(buildTrace({ attributes: '{"tags":["ok","\\ud800"]}' }))).toEqual([['/attributes', 'lone_surrogate']]);
  });

  it('keeps an escaped lone surrogate inside JSON text as the escape it is, and accepts a real pair', () => {
    const result = check(buildTrace({ spans: [buildSpan({ input: '"\\ud800"', attributes: '{"note":"\\udc00"}', name: '😀 \ud83d\ude00' })] }));
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.trace.spans[0]).toMatchObject({ input: '"\\ud800"', attributes: '{"note":"\\udc00"}', name: '😀 😀' });
  });

  it('counts a trace\'s spans before looking into any: the rules take 10,000 and refuse 10,001 at once', () => {
    // Spans that are not objects are the schema's to refuse: the rules pass over them, so the count alone is seen.
    const trace = (n: number) => ({ timestamp: iso(), spans: new Array<number>(n).fill(0) });
    expect(checkTraceRules(trace(MAX_SPANS_PER_TRACE), NOW_MICROS).issues).toEqual([]);
    expect(checkTraceRules(trace(MAX_SPANS_PER_TRACE + 1), NOW_MICROS)).toEqual({
      issues: [{ path: '/spans', code: 'too_many_spans', message: 'must hold at most 10000 spans; split the trace' }],
      traceMicros: NOW_MICROS,
      spanMicros: [],
    });
  });

  // The whole path at the limit (0.1–0.2 s); under mutation (bench/mutation.ts sets MUTATION_TESTS) the test above
  // guards the count, and this one would run for every mutant of validation.
  (process.env.MUTATION_TESTS === undefined ? it : it.skip)('accepts 10,000 spans and refuses 10,001 with one too_many_spans issue', () => {
    const spans = (n: number) => Array.from({ length: n }, () => ({ timestamp: iso(), name: 's' }));
    expect(check(buildTrace({ spans: spans(MAX_SPANS_PER_TRACE) })).ok).toBe(true);
    expect(check(buildTrace({ spans: spans(MAX_SPANS_PER_TRACE + 1) }))).toEqual({
      ok: false,
      issues: [{ path: '/spans', code: 'too_many_spans', message: 'must hold at most 10000 spans; split the trace' }],
    });
  });
});
