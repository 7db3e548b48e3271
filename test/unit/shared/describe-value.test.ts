import { describeValue } from '../../../lambda/shared/domain/describe-value.js';

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
