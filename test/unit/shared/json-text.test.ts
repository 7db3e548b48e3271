import fc from 'fast-check';
import { exceedsDepthLimit } from '../../../lambda/shared/domain/json-limits.js';
import { jsonTextVerdict } from '../../../lambda/shared/domain/json-text.js';

/** JSON text at any depth. */
const isJsonText = (text: string): boolean => jsonTextVerdict(text, Infinity) === 'json';

const parses = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

describe('isJsonText decides as JSON.parse does', () => {
  it.each([
    // values of every kind, alone and nested
    '0', '-0', '12', '-12.5e+3', '1E-2', '0.5', 'true', 'false', 'null', '""', '"a"', '[]', '{}', ' [ 1 , [ ] , { } ] ',
    '{"a":{"b":[1,{"c":null}]},"d":"e"}', '\t\n\r {"a" : 1 }\r\n',
    // every escape, and surrogates JSON.parse takes as they are
    '"\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\uD83D\\uDE00 \\ud800"', '"\ud800"', '"東京 naïve"',
    // refused: numbers
    '01', '-', '1.', '.5', '1e', '1e+', '+1', '0x10', 'NaN', 'Infinity', '1 2', '--1',
    // refused: literals and strings
    'tru', 'nul', 'True', 'falsey', '"', '"a', "'a'", '"\\x"', '"\\u12"', '"\\u12G4"', '"a\nb"', '"\u0000"', '"\u001f"', '"\\"',
    // refused: structure
    '', ' ', '[', ']', '{', '[1,]', '[,1]', '{"a":1,}', '{"a"}', '{"a":}', '{a:1}', '{1:1}', '[1 2]', '{"a":1 "b":2}', '[}', '{]', '[1]]',
    '[1] x', '\ufeff1', '\u00a01', '\u20281', '[1]\u000b', '{"a":1}}', '{"a" 1}', '{"a"::1}',
  ])('%j', (text) => {
    expect(isJsonText(text)).toBe(parses(text));
  });

  it('agrees with JSON.parse on generated JSON, as written and with one character changed, dropped or added', () => {
    const alphabet = fc.constantFrom(...'{}[]":,.-+eE0123456789tfnrul \t\n\\/bu"aA\u0000\u001f\u00e9'.split(''));
    fc.assert(
      fc.property(fc.json(), fc.nat(), alphabet, fc.nat(3), (json, at, char, edit) => {
        const i = json.length === 0 ? 0 : at % json.length;
        const variants = [json, json.slice(0, i) + char + json.slice(i + 1), json.slice(0, i) + json.slice(i + 1), json.slice(0, i) + char + json.slice(i)];
        const text = variants[edit]!;
        expect(isJsonText(text)).toBe(parses(text));
      }),
      { numRuns: 20_000, seed: 30 },
    );
  });

  it('agrees on text built from JSON tokens in any order', () => {
    const token = fc.constantFrom('{', '}', '[', ']', ',', ':', '"k"', '1', '-0.5e3', 'true', 'null', ' ', '"\\u0041"', '"\\q"', '01');
    fc.assert(
      fc.property(fc.array(token, { maxLength: 12 }), (tokens) => {
        const text = tokens.join('');
        expect(isJsonText(text)).toBe(parses(text));
      }),
      { numRuns: 20_000, seed: 30 },
    );
  });

  it('scans nesting deeper than any call stack without recursion', () => {
    const depth = 200_000;
    expect(isJsonText('['.repeat(depth) + ']'.repeat(depth))).toBe(true);
    expect(isJsonText('['.repeat(depth) + ']'.repeat(depth - 1))).toBe(false);
  });
});

describe('jsonTextVerdict: too deep, else JSON or not, as the depth check then JSON.parse decide', () => {
  const oldVerdict = (text: string, maxDepth: number) => (exceedsDepthLimit(text, maxDepth) ? 'too_deep' : parses(text) ? 'json' : 'not_json');

  it.each([
    ['[[[]]]', 3, 'json'],
    ['[[[]]]', 2, 'too_deep'],
    ['{"a":{"b":{}}}', 3, 'json'],
    ['{"a":{"b":{}}}', 2, 'too_deep'],
    // Too deep is said before not JSON, whatever comes first in the text.
    ['x[[[[]]]]', 3, 'too_deep'],
    ['[[[[]]]] x', 3, 'too_deep'],
    ['[[[]]] x', 3, 'not_json'],
    // Brackets inside strings are no nesting.
    ['["[[[[[["]', 1, 'json'],
  ])('%j at most %d deep → %s', (text, maxDepth, expected) => {
    expect(jsonTextVerdict(text, maxDepth)).toBe(expected);
    expect(oldVerdict(text, maxDepth)).toBe(expected);
  });

  it('agrees with the depth check then JSON.parse on text built from JSON tokens in any order', () => {
    const token = fc.constantFrom('{', '}', '[', ']', ',', ':', '"k"', '1', 'null', '"[["', 'x');
    fc.assert(
      fc.property(fc.array(token, { maxLength: 14 }), fc.integer({ min: 0, max: 4 }), (tokens, maxDepth) => {
        const text = tokens.join('');
        expect(jsonTextVerdict(text, maxDepth)).toBe(oldVerdict(text, maxDepth));
      }),
      { numRuns: 30_000, seed: 30 },
    );
  });
});
