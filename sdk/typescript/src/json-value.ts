/**
 * The JSON text of a value as both SDKs write it (pinned by sdk/conformance/encoding-values.json): `JSON.stringify`'s
 * rules, plus a `Map` as an object (a key that is not a string is named by its own JSON text), a `Set` as an array
 * in its order, an `Error` as `{name, message, stack}` (and `cause` when it has one), a `bigint` as its decimal
 * text. A lone surrogate comes out as its `\uXXXX` escape, as `JSON.stringify` writes it since ES2019. Undefined for
 * a value JSON cannot hold at the top (`undefined`, a function); throws for a cycle.
 */
export function toJsonText(value: unknown): string | undefined {
  return JSON.stringify(value, encodeItem);
}

function encodeItem(_key: string, item: unknown): unknown {
  if (typeof item === 'bigint') return item.toString();
  if (item instanceof Map) {
    // No prototype: a key named "__proto__" is a key like any other.
    const object = Object.create(null) as Record<string, unknown>;
    for (const [key, entry] of item as Map<unknown, unknown>) object[typeof key === 'string' ? key : keyText(key)] = entry;
    return object;
  }
  if (item instanceof Set) return [...(item as Set<unknown>)];
  if (item instanceof Error) {
    const encoded: Record<string, unknown> = { name: item.name, message: item.message, stack: item.stack };
    if ('cause' in item) encoded.cause = item.cause;
    return encoded;
  }
  return item;
}

function keyText(key: unknown): string {
  return toJsonText(key) ?? String(key);
}
