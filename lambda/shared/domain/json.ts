/** A JSON value: what `JSON.parse` returns, and what an OTLP `AnyValue` converts to. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object (not an array, not null). */
export type JsonObject = { [key: string]: JsonValue };

/** True for a JSON object; parsed JSON only ever holds JSON values, so the members are too. */
export const isJsonObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
