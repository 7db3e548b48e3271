import { exceedsContainerLimit, MAX_JSON_CONTAINERS } from '../../../lambda/ingest/request/parse-batch.js';

describe('exceedsContainerLimit (JSON.parse memory bound)', () => {
  it.each([
    ['[[]]', 1, true],
    ['[[]]', 2, false],
    ['{"a":[{}]}', 2, true],
    ['["[[[[", "\\"[[[", {}]', 2, false],
    ['["\\\\", [[[ ]]] ]', 2, true],
    ['["a\\\\\\"[[[[[[[[", {}]', 2, false],
    ['[[[["unterminated', 2, true],
    ['["unterminated [[[[[[[[[', 2, false],
  ])('%s with limit %d → %p', (text, limit, expected) => {
    expect(exceedsContainerLimit(text, limit)).toBe(expected);
  });

  it('never scans a body shorter than the limit (each container takes a character)', () => {
    expect(exceedsContainerLimit('['.repeat(MAX_JSON_CONTAINERS))).toBe(false);
    expect(exceedsContainerLimit('['.repeat(MAX_JSON_CONTAINERS + 1))).toBe(true);
  });
});
