import { describeValue, jsonSyntaxReason } from '../../../lambda/shared/domain/describe-value.js';

describe('describeValue names a value by its type and size, never its content', () => {
  it.each([
    ['null', null, 'null'],
    ['an empty array', [], 'an array of 0 items'],
    ['an array of one item', ['4111-1111-1111-1111'], 'an array of 1 item'],
    ['an empty string', '', 'a string of 0 characters'],
    ['a string, counted in code points', 'card \u{1F4B3}', 'a string of 6 characters'],
    ['an object', { card: '4111-1111-1111-1111' }, 'an object'],
    // String() throws on it: its toString is not a function.
    ['an object whose toString is a number', JSON.parse('{"toString": 1}'), 'an object'],
    ['a number', 4111111111111111, 'a number'],
    ['a boolean', false, 'a boolean'],
    ['nothing', undefined, 'no value'],
  ])('%s', (_, value, described) => {
    expect(describeValue(value)).toBe(described);
  });

  it('names an array nested a million deep without overflowing the stack', () => {
    expect(describeValue(JSON.parse(`${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}`))).toBe('an array of 1 item');
  });
});

describe('jsonSyntaxReason gives JSON.parse\'s reason without the excerpt of the text V8 quotes', () => {
  const refusal = (text: string): unknown => {
    try {
      JSON.parse(text);
    } catch (error) {
      return error;
    }
    throw new Error(`${text} parsed`);
  };

  it.each([
    ['an unexpected token at the start', 'card 4111-1111-1111-1111 exp 12/29', "Unexpected token 'c'"],
    ['an unexpected token inside', '{"traces":[{"input": card 4111-1111-1111-1111 exp 12/29}]}', "Unexpected token 'c'"],
    ['an unexpected token in a short text', 'card', "Unexpected token 'c'"],
    ['a reason with a position', '{"a":"4111', 'Unterminated string in JSON at position 10 (line 1 column 11)'],
    ['an empty text', '', 'Unexpected end of JSON input'],
  ])('%s', (_, text, reason) => {
    expect(jsonSyntaxReason(refusal(text))).toBe(reason);
  });

  it('says "unexpected text" when nothing is left once the excerpt is cut, or nothing was an Error', () => {
    expect(jsonSyntaxReason(new SyntaxError('"4111-1111" is not valid JSON'))).toBe('unexpected text');
    expect(jsonSyntaxReason('4111-1111')).toBe('unexpected text');
  });
});
