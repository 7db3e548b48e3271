import { validateTrace } from '../../../lambda/ingest/core/validation/validate-trace.js';
import { buildSpan, buildTrace, iso, NOW_MICROS } from '../../../devkit/builders/trace-builders.js';

/*
 * Each issue a client is answered with, word for word: path, code and message (docs/contract.md §3). The codes are
 * the contract; the messages are what a developer reads first, so a message that goes blank or says another
 * limit is a regression too. Through validateTrace, the entry point both routes' validation shares.
 */

const check = (trace: unknown) => validateTrace(trace, NOW_MICROS, () => '00000000-0000-4000-8000-000000000001');
const issues = (trace: unknown) => {
  const result = check(trace);
  return result.ok ? 'accepted' : result.issues;
};
const withoutTimestamp = () => {
  const trace = buildTrace() as Record<string, unknown>;
  delete trace.timestamp;
  return trace;
};
const ID = '11111111-2222-4333-8444-555555555555';
const HEX_ID = 'abcdef01-2345-4678-9abc-def012345678';
const HOW = 'send JSON.stringify(value) (Python: json.dumps(value))';
const PLAIN = (what: string) => `must be a string holding JSON text, or "": plain text is not JSON (this is ${what}); to store text, ${HOW}`;
// NOW_MICROS is 2026-11-22T12:00:00Z: the message says what the server's clock read and the window it accepts.
const CLOCK = 'must be within 24 hours of the server clock (server time 2026-11-22T12:00:00.000000Z: accepted from 2026-11-21T12:00:00.000000Z to 2026-11-23T12:00:00.000000Z, bounds included)';
const LONE = 'holds a UTF-16 surrogate without its pair (\\uD800-\\uDFFF), which cannot be stored as UTF-8; send the pair or escape it inside JSON text';

describe('validateTrace answers each mistake with its path, code and message', () => {
  it.each([
    ['a missing timestamp', withoutTimestamp(), '/timestamp', 'required', 'is required'],
    ['a null timestamp', buildTrace({ timestamp: null }), '/timestamp', 'required', 'is required and must not be null'],
    ['a null span name', buildTrace({ spans: [buildSpan({ name: null })] }), '/spans/0/name', 'required', 'is required and must not be null'],
    ['a timestamp as a number', buildTrace({ timestamp: 5 }), '/timestamp', 'invalid_type', 'must be a string'],
    ['a span name as a number', buildTrace({ spans: [buildSpan({ name: 5 })] }), '/spans/0/name', 'invalid_type', 'must be a string'],
    ['a token count as a string', buildTrace({ input_tokens: '5' }), '/input_tokens', 'invalid_type', 'must be an integer (finite, not a string)'],
    ['a fractional token count', buildTrace({ input_tokens: 1.5 }), '/input_tokens', 'invalid_type', 'must be an integer (finite, not a string)'],
    ['a duration as a string', buildTrace({ duration_ms: '1' }), '/duration_ms', 'invalid_type', 'must be a number (finite, not a string)'],
    ['a number for a string member', buildTrace({ environment: 5 }), '/environment', 'invalid_type', 'must be a string'],
    ['spans as a string', buildTrace({ spans: 'none' }), '/spans', 'invalid_type', 'must be an array'],
    ['a span that is not an object', buildTrace({ spans: [5] }), '/spans/0', 'not_an_object', 'must be a JSON object'],
    ['the eleventh span not an object', buildTrace({ spans: [...Array.from({ length: 10 }, (_, i) => buildSpan({}, i)), 'x'] }), '/spans/10', 'not_an_object', 'must be a JSON object'],
    ['a trace that is not an object', [buildTrace()], '', 'not_an_object', 'must be a JSON object'],
    ['a negative duration', buildTrace({ duration_ms: -1 }), '/duration_ms', 'out_of_range', 'must be ≥ 0'],
    ['a token count past 2^53 − 1', buildTrace({ total_tokens: 2 ** 53 }), '/total_tokens', 'out_of_range', 'must be ≤ 9007199254740991 (2^53−1)'],
    ['a status in capitals', buildTrace({ status: 'OK' }), '/status', 'invalid_enum', 'must be one of ok, error, timeout'],
    ['a span kind in capitals', buildTrace({ spans: [buildSpan({ kind: 'LLM' })] }), '/spans/0/kind', 'invalid_enum', 'must be one of llm, tool, chain, retriever, agent, custom'],
    ['a trace id that is not a UUID', buildTrace({ trace_id: 'x' }), '/trace_id', 'invalid_uuid', 'must be a UUID such as 0b7e3c1a-4f2d-4c8e-9a61-3f5b2d9e7c10'],
    ['a span id that is not a UUID', buildTrace({ spans: [buildSpan({ span_id: 'x' })] }), '/spans/0/span_id', 'invalid_uuid', 'must be a UUID such as 0b7e3c1a-4f2d-4c8e-9a61-3f5b2d9e7c10'],
    ['a model of 1,025 characters', buildTrace({ model: 'm'.repeat(1025) }), '/model', 'too_long', 'must be at most 1024 characters'],
    ['a timestamp that is not a date', buildTrace({ timestamp: '2026-02-30T12:00:00Z' }), '/timestamp', 'invalid_timestamp', 'must be an ISO 8601 date-time such as 2026-01-31T12:00:00.123Z'],
    ['a timestamp in another form', buildTrace({ timestamp: '2026-11-22 12:00:00Z' }), '/timestamp', 'invalid_timestamp', 'must be an ISO 8601 date-time such as 2026-01-31T12:00:00.123Z'],
    ['a timestamp a day and 1 ms ahead', buildTrace({ timestamp: iso(24 * 3600 * 1000 + 1) }), '/timestamp', 'timestamp_out_of_range', CLOCK],
    ['a span timestamp a day and 1 ms behind', buildTrace({ spans: [buildSpan({ timestamp: iso(-24 * 3600 * 1000 - 1) })] }), '/spans/0/timestamp', 'timestamp_out_of_range', CLOCK],
    ['input that is not JSON', buildTrace({ spans: [buildSpan({ input: '{x' })] }), '/spans/0/input', 'not_json_string', PLAIN('a string of 2 characters')],
    ['attributes holding an array', buildTrace({ attributes: '[1]' }), '/attributes', 'not_json_object', 'must hold a JSON object, not another JSON value'],
    ['attributes that are not JSON', buildTrace({ attributes: 'nope' }), '/attributes', 'not_json_string', `must be a string holding a JSON object, or "": ${HOW}`],
    ['a span\'s attributes that are not JSON', buildTrace({ spans: [buildSpan({ attributes: 'nope' })] }), '/spans/0/attributes', 'not_json_string', `must be a string holding a JSON object, or "": ${HOW}`],
    ['tags that are not an array', buildTrace({ attributes: '{"tags":"p"}' }), '/attributes', 'invalid_tags', 'tags inside attributes must be an array of strings'],
    ['tags holding a number', buildTrace({ attributes: '{"tags":["a",1]}' }), '/attributes', 'invalid_tags', 'tags inside attributes must be an array of strings'],
    ['output nested 200 deep', buildTrace({ spans: [buildSpan({ output: `${'['.repeat(200)}${']'.repeat(200)}` })] }), '/spans/0/output', 'too_deep', 'must not nest arrays and objects deeper than 128 levels'],
    ['attributes nested 200 deep', buildTrace({ attributes: `${'{"a":'.repeat(200)}1${'}'.repeat(200)}` }), '/attributes', 'too_deep', 'must not nest arrays and objects deeper than 128 levels'],
    // Too deep is all that is said of such text: it is not parsed, so neither is it said not to hold an object.
    ['attributes an array nested 200 deep', buildTrace({ attributes: `${'['.repeat(200)}${']'.repeat(200)}` }), '/attributes', 'too_deep', 'must not nest arrays and objects deeper than 128 levels'],
    ['a repeated span id', buildTrace({ spans: [buildSpan({ span_id: ID }), buildSpan({ span_id: ID.toUpperCase() })] }), '/spans/1/span_id', 'duplicate_span_id', 'repeats the span_id of /spans/0'],
    ['a span its own parent', buildTrace({ spans: [buildSpan({ span_id: ID, parent_span_id: ID.toUpperCase() })] }), '/spans/0/parent_span_id', 'invalid_parent', "must not equal the span's own span_id"],
    ['a span its own parent, its id\'s hex letters in another case', buildTrace({ spans: [buildSpan({ span_id: HEX_ID, parent_span_id: HEX_ID.toUpperCase() })] }), '/spans/0/parent_span_id', 'invalid_parent', "must not equal the span's own span_id"],
    ['a lone surrogate in a trace member', buildTrace({ agent_name: '\ud800' }), '/agent_name', 'lone_surrogate', LONE],
    ['a lone surrogate in a tag', buildTrace({ attributes: '{"tags":["\\udc00"]}' }), '/attributes', 'lone_surrogate', LONE],
    // Found twice, in the member's text and in the tag it holds: one issue.
    ['a raw lone surrogate in a tag', buildTrace({ attributes: '{"tags":["\udc00"]}' }), '/attributes', 'lone_surrogate', LONE],
  ])('%s', (_, trace, path, code, message) => {
    expect(issues(trace)).toEqual([{ path, code, message }]);
  });

  // A JSON value sent where its JSON text is wanted, and plain text: the message says what to send instead and names
  // what was sent by its type and size, never by its content (a message is kept with the response).
  it.each([
    ['input as a number', { input: 4111111111111111 }, '/spans/0/input', 'invalid_type', `must be a string holding JSON text, not a number: ${HOW}`],
    ['output as a boolean', { output: true }, '/spans/0/output', 'invalid_type', `must be a string holding JSON text, not a boolean: ${HOW}`],
    ['input as an array', { input: [1] }, '/spans/0/input', 'invalid_type', `must be a string holding JSON text, not an array of 1 item: ${HOW}`],
    ['span attributes as an array', { attributes: ['a', 'b'] }, '/spans/0/attributes', 'invalid_type', `must be a string holding a JSON object, not an array of 2 items: ${HOW}`],
    ['input as an object', { input: { card: '4111-1111-1111-1111' } }, '/spans/0/input', 'invalid_type', `must be a string holding JSON text, not an object: ${HOW}`],
    ['plain text', { output: 'card 4111-1111-1111-1111 exp 12/29' }, '/spans/0/output', 'not_json_string', PLAIN('a string of 34 characters')],
    ['plain text of one character', { output: 'a' }, '/spans/0/output', 'not_json_string', PLAIN('a string of 1 character')],
    // Characters as too_long counts them: a surrogate pair is one.
    ['plain text with an emoji', { output: '\u{1F600}!' }, '/spans/0/output', 'not_json_string', PLAIN('a string of 2 characters')],
  ])('teaches %s', (_, span, path, code, message) => {
    expect(issues(buildTrace({ spans: [buildSpan(span)] }))).toEqual([{ path, code, message }]);
  });

  it('names an array nested 100,000 deep by its type, where quoting it would overflow the stack', () => {
    const deep: unknown = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`);
    expect(issues(buildTrace({ attributes: deep }))).toEqual([
      { path: '/attributes', code: 'invalid_type', message: `must be a string holding a JSON object, not an array of 1 item: ${HOW}` },
    ]);
  });

  it('names the first of the spans a span id repeats, whichever case each is in', () => {
    const spans = [buildSpan({ span_id: ID }), buildSpan({}, 1), buildSpan({ span_id: ID.toUpperCase() }, 2), buildSpan({ span_id: ID }, 3)];
    expect(issues(buildTrace({ spans }))).toEqual([
      { path: '/spans/2/span_id', code: 'duplicate_span_id', message: 'repeats the span_id of /spans/0' },
      { path: '/spans/3/span_id', code: 'duplicate_span_id', message: 'repeats the span_id of /spans/0' },
    ]);
  });

  it('reports each path and code once, the schema\'s issues before the rules\'', () => {
    const trace = buildTrace({ status: 'OK', timestamp: '2026-02-30T12:00:00Z', spans: [buildSpan({ kind: 'LLM', input: '{x' })] });
    expect(issues(trace)).toEqual([
      { path: '/status', code: 'invalid_enum', message: 'must be one of ok, error, timeout' },
      { path: '/spans/0/kind', code: 'invalid_enum', message: 'must be one of llm, tool, chain, retriever, agent, custom' },
      { path: '/timestamp', code: 'invalid_timestamp', message: 'must be an ISO 8601 date-time such as 2026-01-31T12:00:00.123Z' },
      { path: '/spans/0/input', code: 'not_json_string', message: PLAIN('a string of 2 characters') },
    ]);
  });
});
