/**
 * How a message names a value it was sent, or read from storage, without quoting it. A message outlives the request:
 * the ingest response is kept 24 h in its idempotency record, a dead-letter reason is logged, and a value can hold
 * a prompt, a user id or a card number. `JSON.stringify` and `String()` would also throw on a value nested a few
 * thousand levels deep (`RangeError`), and `String()` on an object whose `toString` is not a function (`TypeError`).
 */

const plural = (count: number, noun: string): string => `${count} ${noun}${count === 1 ? '' : 's'}`;

/** Characters as the `too_long` rule counts them: code points, a surrogate pair once. */
function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/**
 * `value`'s JSON type and size ("an object", "an array of 3 items", "a string of 35 characters"), never its
 * content. Reads only `typeof`, `Array.isArray` and `length`: it cannot throw, however deep the value.
 */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `an array of ${plural(value.length, 'item')}`;
  if (typeof value === 'string') return `a string of ${plural(codePoints(value), 'character')}`;
  if (typeof value === 'object') return 'an object';
  if (value === undefined) return 'no value';
  return `a ${typeof value}`;
}

/**
 * The reason `JSON.parse` gives for refusing a text, without the excerpt of that text V8 quotes after an unexpected
 * token (`Unexpected token 'c', "card 4111-"... is not valid JSON` becomes `Unexpected token 'c'`). Reasons that give
 * a position instead (`Unterminated string in JSON at position 7 (line 1 column 8)`) stay whole.
 */
export function jsonSyntaxReason(error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  // Everything from the first double quote: V8 puts every excerpt it quotes between double quotes.
  const cut = message.indexOf('"');
  const reason = cut === -1 ? message : message.slice(0, cut).replace(/[\s,.]+$/, '');
  return reason === '' ? 'unexpected text' : reason;
}
