import { MalformedBodyError } from '../../../../lambda/ingest/core/errors.js';
import { mayHoldLoneSurrogates } from '../../../../lambda/ingest/core/validation/well-formed.js';
import { validateDraft } from '../../../../lambda/ingest/core/validation/validate-trace.js';
import { draftBatch, MAX_TRACES_PER_BATCH, parseBatch } from '../../../../lambda/ingest/json/parse-batch.js';
import { MAX_JSON_CONTAINERS } from '../../../../lambda/shared/domain/json-limits.js';
import { iso, NOW_MICROS } from '../../../../devkit/builders/trace-builders.js';

/** The batch envelope's refusals word for word (docs/contract.md §1, check 5): the 400 a client reads. */
function refusal(text: string): string {
  try {
    parseBatch(text);
  } catch (error) {
    expect(error).toBeInstanceOf(MalformedBodyError);
    return (error as Error).message;
  }
  throw new Error('accepted');
}

const traces = (count: number) => JSON.stringify({ traces: Array.from({ length: count }, () => ({})) });

describe('parseBatch', () => {
  it.each([
    ['not JSON', '{"traces": [', /^Malformed body: not valid JSON \(.+\)$/],
    ['an array', '[]', 'Malformed body: the body must be a JSON object with a "traces" array'],
    ['null', 'null', 'Malformed body: the body must be a JSON object with a "traces" array'],
    ['a string', '"traces"', 'Malformed body: the body must be a JSON object with a "traces" array'],
    ['no traces', '{"trace": []}', 'Malformed body: "traces" is missing; send {"traces": [...]} with 1 to 500 traces'],
    ['null traces', '{"traces": null}', 'Malformed body: "traces" is missing; send {"traces": [...]} with 1 to 500 traces'],
    ['traces as an object', '{"traces": {}}', 'Malformed body: "traces" must be an array of 1 to 500 traces'],
    ['traces as a string', '{"traces": "[]"}', 'Malformed body: "traces" must be an array of 1 to 500 traces'],
    ['no trace', '{"traces": []}', 'Malformed body: "traces" is empty; send 1 to 500 traces'],
    [`${MAX_TRACES_PER_BATCH + 1} traces`, traces(MAX_TRACES_PER_BATCH + 1), `Malformed body: "traces" has ${MAX_TRACES_PER_BATCH + 1} items, more than the limit of ${MAX_TRACES_PER_BATCH}; split the batch`],
  ])('refuses %s', (_, text, message) => {
    if (typeof message === 'string') expect(refusal(text)).toBe(message);
    else expect(refusal(text)).toMatch(message);
  });

  it('keeps the JSON parser\'s error as the cause', () => {
    try {
      parseBatch('{');
    } catch (error) {
      expect((error as Error).cause).toBeInstanceOf(SyntaxError);
      return;
    }
    throw new Error('accepted');
  });

  it(`takes 1 to ${MAX_TRACES_PER_BATCH} traces, as they are`, () => {
    expect(parseBatch('{"traces": [{"a": 1}]}')).toEqual([{ a: 1 }]);
    expect(parseBatch(traces(MAX_TRACES_PER_BATCH))).toHaveLength(MAX_TRACES_PER_BATCH);
  });

  it(`refuses more than ${MAX_JSON_CONTAINERS} brackets before parsing, those in strings too, and takes that many`, () => {
    const withBrackets = (count: number) => `{"traces": [{"note": "${'['.repeat(count - 3)}"}]}`;
    expect(parseBatch(withBrackets(MAX_JSON_CONTAINERS))).toHaveLength(1);
    expect(refusal(withBrackets(MAX_JSON_CONTAINERS + 1))).toBe(
      `Malformed body: more than ${MAX_JSON_CONTAINERS} JSON arrays and objects (every [ and { counts, also inside strings, whose JSON text is parsed too); a batch needs far fewer, split it or remove unknown members`,
    );
  });
});

describe('draftBatch', () => {
  /** A batch of one trace whose `environment` is `environment` as it stands in the body's text. */
  const body = (environment: string) => `{"traces": [{"timestamp": "${iso()}", "environment": "${environment}", "spans": [{"timestamp": "${iso()}", "name": "a"}]}]}`;
  const issuesOf = (text: string, strictUtf8: boolean) =>
    draftBatch(text, strictUtf8).map((draft) => {
      const result = validateDraft(draft, NOW_MICROS, () => '00000000-0000-4000-8000-000000000001');
      return result.ok ? 'accepted' : result.issues.map(({ path, code }) => `${path} ${code}`);
    });

  it('hands each trace over as sent, to be rejected whole by one invalid span', () => {
    expect(draftBatch('{"traces": [{"a": 1}, 2]}', true)).toEqual([
      { trace: { a: 1 }, spansOnly: false, invalidSpan: 'rejects-trace', wellFormedText: true },
      { trace: 2, spansOnly: false, invalidSpan: 'rejects-trace', wellFormedText: true },
    ]);
  });

  it('skips the per-string surrogate check only for text that can hold no lone surrogate', () => {
    const flag = (text: string, strictUtf8: boolean) => draftBatch(text, strictUtf8).map((draft) => draft.wellFormedText);
    expect(flag(body('prod \\u00e9'), false)).toEqual([true]);
    expect(flag(body('prod \\ud800'), true)).toEqual([false]);
    expect(flag(body(`prod ${String.fromCharCode(0xd800)}`), false)).toEqual([false]);
  });

  it('refuses a lone surrogate spelled as an escape, also in a strictly decoded body', () => {
    for (const strictUtf8 of [true, false]) expect(issuesOf(body('prod \\udc00'), strictUtf8)).toEqual([['/environment lone_surrogate']]);
  });

  it('refuses a raw lone surrogate in the text the gateway handed over, which no strict decoding checked', () => {
    expect(issuesOf(body(`prod ${String.fromCharCode(0xd800)}`), false)).toEqual([['/environment lone_surrogate']]);
    expect(issuesOf(body('prod \\u00e9'), false)).toEqual(['accepted']);
  });
});

describe('mayHoldLoneSurrogates', () => {
  it.each([
    ['plain text', 'no escapes at all', false],
    ['a BMP escape', '"\\u00e9"', false],
    ['an escape of U+D7FF', '"\\ud7ff"', false],
    ['an escape of U+E000', '"\\ue000"', false],
    ['a high surrogate escape', '"\\ud800"', true],
    ['a low surrogate escape, upper case', '"\\uDC00"', true],
    ['a surrogate escape in upper case U+D8FF', '"\\uD8FF"', true],
    ['U+D900', '"\\ud900"', true],
    ['U+DA00 to U+DFFF', '"\\uda00\\udbff\\udfff"', true],
    ['U+DAxx alone', '"\\uDA12"', true],
    ['U+DFxx alone', '"\\udf12"', true],
    ['a surrogate escape after other escapes', '"\\u0041\\u0042\\ud83d"', true],
    ['an escaped backslash before u (an escape one level down)', '"\\\\ud800"', true],
    ['U+D0xx (no surrogate)', '"\\ud012"', false],
    ['U+D7xx after a \\u at the end', '"\\ud712\\u"', false],
    ['a \\u at the very end', '\\u', false],
    ['U+DGxx (not hex)', '"\\udg00"', false],
    ['U+08xx and U+0Axx (a surrogate\'s second digit, without its d)', '"\\u0800\\u0a00\\u09ff"', false],
  ])('%s: %s', (_, text, expected) => {
    expect(mayHoldLoneSurrogates(text)).toBe(expected);
  });
});
