import { bracketsUpTo, exceedsContainerLimit, exceedsDepthLimit, MAX_JSON_CONTAINERS, MAX_JSON_TEXT_DEPTH } from '../../../lambda/shared/domain/json-limits.js';

describe('bracketsUpTo', () => {
  it('counts [ and { and their escaped spellings, in text or in UTF-8 bytes', () => {
    const text = '[{"a":"\\u005b\\u005B\\u007b\\u007B]}"}]';
    expect(bracketsUpTo(text, 100)).toBe(6);
    expect(bracketsUpTo(Buffer.from(text), 100)).toBe(6);
    expect(bracketsUpTo('"\\u005c ] } \\u005d"', 100)).toBe(0);
  });

  it('stops counting at one past the limit', () => {
    expect(bracketsUpTo('[[[[[[', 2)).toBe(3);
    expect(bracketsUpTo('[[{{', 0)).toBe(1);
    expect(bracketsUpTo('[[[', 3)).toBe(3);
  });

  it('stops counting escaped brackets at one past the limit too', () => {
    expect(bracketsUpTo('"\\u005b\\u005b\\u005b\\u005b\\u005b"', 2)).toBe(3);
    expect(bracketsUpTo('["\\u007b\\u007b\\u007b"]', 1)).toBe(2);
  });
});

describe('exceedsContainerLimit (JSON.parse memory bound)', () => {
  it.each([
    ['[[]]', 1, true],
    ['[[]]', 2, false],
    ['{"a":[{}]}', 2, true],
    // Brackets inside strings count: the strings of input, output and attributes hold JSON text that is parsed too.
    ['["[[", {}]', 2, true],
    ['["a", {}]', 2, false],
  ])('%s with limit %d → %p', (text, limit, expected) => {
    expect(exceedsContainerLimit(text, limit)).toBe(expected);
    expect(exceedsContainerLimit(Buffer.from(text), limit)).toBe(expected);
  });

  it('counts brackets escaped in a string (\\u005b, \\u007B…): the first parse makes them brackets of JSON text parsed in turn', () => {
    // Issue 27: 300,000 `\u007b…` objects inside an `input` slipped past the count.
    const body = JSON.stringify({ traces: [{ spans: [{ input: '' }] }] }).replace('""', `"${'\\u007b}'.repeat(4)}${'\\u005B]'.repeat(4)}"`);
    // 5 brackets of the body itself and 8 escaped ones.
    expect(exceedsContainerLimit(body, 12)).toBe(true);
    expect(exceedsContainerLimit(Buffer.from(body), 12)).toBe(true);
    expect(exceedsContainerLimit(body, 13)).toBe(false);
    // The string they are in holds the brackets the count stood for.
    expect((JSON.parse(body) as { traces: { spans: { input: string }[] }[] }).traces[0]?.spans[0]?.input).toBe('{}{}{}{}[][][][]');
  });

  it.each([
    ['\\u005b', 1],
    ['\\u005B', 1],
    ['\\u007b', 1],
    ['\\u007B', 1],
    // Escapes of other characters, a bracket's neighbours among them, are not brackets.
    ['\\u005c', 0],
    ['\\u005d', 0],
    ['\\u007d', 0],
    ['\\u0041', 0],
    ['\\u006b', 0],
    ['\\u005', 0],
  ])('counts the escape %s as %d bracket(s), in text and in bytes', (escape, brackets) => {
    const body = `"${escape}${escape}"`.padEnd(16, ' ');
    for (const haystack of [body, Buffer.from(body)]) {
      expect(exceedsContainerLimit(haystack, 2 * brackets)).toBe(false);
      if (brackets > 0) expect(exceedsContainerLimit(haystack, 2 * brackets - 1)).toBe(true);
    }
  });

  it('never scans a body shorter than the limit (each container takes a character)', () => {
    expect(exceedsContainerLimit('['.repeat(MAX_JSON_CONTAINERS))).toBe(false);
    expect(exceedsContainerLimit('['.repeat(MAX_JSON_CONTAINERS + 1))).toBe(true);
  });

  it('counts the bytes of a view at its offset, not the whole buffer under it', () => {
    const bytes = Buffer.from('[[[[ab');
    expect(exceedsContainerLimit(bytes.subarray(4), 1)).toBe(false);
    expect(exceedsContainerLimit(bytes.subarray(2), 1)).toBe(true);
  });
});

describe('exceedsDepthLimit (nesting of JSON text held in a string)', () => {
  const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

  it.each([
    [nested(3), 3, false],
    [nested(4), 3, true],
    ['{"a":{"b":{"c":[1]}}}', 3, true],
    ['[[],[],[],[],[]]', 3, false],
    ['{"a":{},"b":{},"c":{},"d":{}}', 2, false],
    // Brackets inside strings are text, not nesting, however many there are.
    ['["[[[[[[", "\\"[[[[[["]', 2, false],
    ['["\\\\", [[[ ]]] ]', 3, true],
    ['"unterminated [[[[[[[[', 2, false],
    ['[[[["unterminated', 3, true],
  ])('%s with limit %d → %p', (text, limit, expected) => {
    expect(exceedsDepthLimit(text, limit)).toBe(expected);
  });

  it(`allows ${MAX_JSON_TEXT_DEPTH} levels and refuses one more, at any width`, () => {
    expect(exceedsDepthLimit(`[${Array(1_000).fill(nested(MAX_JSON_TEXT_DEPTH - 1)).join(',')}]`)).toBe(false);
    expect(exceedsDepthLimit(`[${nested(MAX_JSON_TEXT_DEPTH - 1)},${nested(MAX_JSON_TEXT_DEPTH)}]`)).toBe(true);
  });

  it('answers a 10-million-deep text without parsing it', () => {
    expect(exceedsDepthLimit(nested(10_000_000))).toBe(true);
  });
});
