/** The values of a header that must be sent once. Repeats of one value count as one. */
export type SingleHeaderValue = { kind: 'absent' } | { kind: 'one'; value: string } | { kind: 'conflicting' };

/** Applies the one rule for `X-API-Key` and `Idempotency-Key`: exactly one distinct (trimmed) value. */
export function singleHeaderValue(values: readonly string[]): SingleHeaderValue {
  const distinct = new Set(values.map((value) => value.trim()));
  const [first] = distinct;
  if (first === undefined) return { kind: 'absent' };
  return distinct.size === 1 ? { kind: 'one', value: first } : { kind: 'conflicting' };
}
