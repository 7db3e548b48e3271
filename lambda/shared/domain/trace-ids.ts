/**
 * OTLP ids as our UUIDs, deterministically (docs/api.md, "Send from OpenTelemetry"):
 * - `trace_id` is the 32 hex digits of the 16-byte trace id, in 8-4-4-4-12 form;
 * - `span_id` (and `parent_span_id`) is the first 16 hex digits of the trace id followed by the
 *   16 hex digits of the 8-byte span id.
 * Both are reversible: the OTel ids are the UUID without dashes (its last 16 digits for a span).
 * The OTLP route maps with these (lambda/ingest/otlp/map-export.ts), and an erasure request names a trace by them.
 */
export function traceUuid(traceHex: string): string {
  return `${traceHex.slice(0, 8)}-${traceHex.slice(8, 12)}-${traceHex.slice(12, 16)}-${traceHex.slice(16, 20)}-${traceHex.slice(20)}`;
}

export function spanUuid(traceHex: string, spanHex: string): string {
  return `${traceHex.slice(0, 8)}-${traceHex.slice(8, 12)}-${traceHex.slice(12, 16)}-${spanHex.slice(0, 4)}-${spanHex.slice(4)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const OTEL_TRACE_ID = /^[0-9a-f]{32}$/i;

/**
 * A trace id in the one form the lake stores it, lower-case 8-4-4-4-12 hex (the JSON route lower-cases the UUID it
 * accepts; the OTLP route lower-cases the hex and writes {@link traceUuid} of it), from a UUID or the 32 hex digits
 * of an OpenTelemetry trace id, in either case; `undefined` for anything else, which no stored trace id equals.
 */
export function storedTraceId(value: string): string | undefined {
  if (UUID.test(value)) return value.toLowerCase();
  if (OTEL_TRACE_ID.test(value)) return traceUuid(value.toLowerCase());
  return undefined;
}
