/** A JSON value: what `JSON.parse` returns, and what an OTLP `AnyValue` converts to. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object (not an array, not null). */
export type JsonObject = { [key: string]: JsonValue };

/** True for a JSON object; parsed JSON only ever holds JSON values, so the members are too. */
export const isJsonObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Sets a member as `JSON.parse` would: as an own property, also when the key is `__proto__`, which plain
 * assignment would take as the object's prototype instead (an OTLP attribute may be named anything).
 */
export function setMember(target: JsonObject, key: string, value: JsonValue): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}
