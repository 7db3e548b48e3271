import type { JsonObject, JsonValue } from '../../shared/domain/json.js';
import Long from 'long';
import $protobuf from 'protobufjs/minimal.js';
import { exceedsContainerLimit, MAX_JSON_CONTAINERS } from '../../shared/domain/json-limits.js';
import { google, opentelemetry } from '../generated/otlp-trace.js';
import { assembleSpan, checkNestingDepth, convertAttributes, type OtlpExport, type OtlpSpan } from './otlp-model.js';

// 64-bit fields decode to exact Long values instead of doubles that lose the nanoseconds. The
// runtime looks for `long` with a dynamic require that a bundled ES module cannot satisfy.
$protobuf.util.Long = Long;
$protobuf.configure();

const proto = opentelemetry.proto;
type AnyValue = opentelemetry.proto.common.v1.AnyValue.$Properties;
type KeyValue = opentelemetry.proto.common.v1.KeyValue.$Properties;
type Span = opentelemetry.proto.trace.v1.Span.$Properties;

/** Thrown for a body that is not an `ExportTraceServiceRequest`. */
export class UndecodableRequestError extends Error {
  override name = 'UndecodableRequestError';
}

const EMPTY = new Uint8Array(0);
const hex = (bytes: Uint8Array | null | undefined): string =>
  bytes && bytes.length > 0 ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex') : '';

function toBigInt(value: Long | number | null | undefined): bigint {
  if (value === null || value === undefined) return 0n;
  if (typeof value === 'number') return BigInt(Math.trunc(value));
  return (BigInt(value.high >>> 0) << 32n) | BigInt(value.low >>> 0);
}

function int64Value(value: Long | number): number | string {
  if (typeof value === 'number') return value;
  const number = value.toNumber();
  return Number.isSafeInteger(number) ? number : value.toString();
}

function anyValue(value: AnyValue | null | undefined, depth: number): JsonValue {
  if (!value) return null;
  if (value.stringValue != null) return value.stringValue;
  if (value.boolValue != null) return value.boolValue;
  if (value.intValue != null) return int64Value(value.intValue);
  if (value.doubleValue != null) return Number.isFinite(value.doubleValue) ? value.doubleValue : String(value.doubleValue);
  if (value.bytesValue != null) return Buffer.from(value.bytesValue).toString('base64');
  if (value.arrayValue != null || value.kvlistValue != null) checkNestingDepth(depth);
  if (value.arrayValue != null) return (value.arrayValue.values ?? []).map((item) => anyValue(item, depth + 1));
  if (value.kvlistValue != null) {
    const object: JsonObject = {};
    for (const kv of value.kvlistValue.values ?? []) object[kv.key ?? ''] = anyValue(kv.value, depth + 1);
    return object;
  }
  return null;
}

const putKeyValue = (kv: KeyValue, target: JsonObject): void => {
  target[kv.key ?? ''] = anyValue(kv.value, 1);
};

function toSpan(span: Span): OtlpSpan {
  return assembleSpan(
    {
      traceId: hex(span.traceId),
      spanId: hex(span.spanId),
      parentSpanId: hex(span.parentSpanId),
      name: span.name ?? '',
      kind: span.kind ?? 0,
      startTimeUnixNano: toBigInt(span.startTimeUnixNano),
      endTimeUnixNano: toBigInt(span.endTimeUnixNano),
      statusCode: span.status?.code ?? 0,
      statusMessage: span.status?.message ?? '',
      traceState: span.traceState ?? '',
    },
    convertAttributes(span.attributes, putKeyValue),
    (span.events ?? []).map((event) => ({
      name: event.name ?? '',
      timeUnixNano: toBigInt(event.timeUnixNano),
      converted: convertAttributes(event.attributes, putKeyValue),
    })),
  );
}

/**
 * Decodes an OTLP/HTTP binary protobuf body (`ExportTraceServiceRequest`) with the code generated
 * from the official protos. Unknown fields are skipped as protobuf requires; truncated data, wrong
 * wire types, invalid UTF-8 and nesting past the decoder's recursion limit throw
 * {@link UndecodableRequestError}.
 */
export function decodeExportRequest(bytes: Uint8Array): OtlpExport {
  if (exceedsContainerLimit(bytes)) {
    throw new UndecodableRequestError(`more than ${MAX_JSON_CONTAINERS} bytes [ and { (the JSON text strings hold is parsed); split the export`);
  }
  let request;
  try {
    request = proto.collector.trace.v1.ExportTraceServiceRequest.decode(bytes.length > 0 ? bytes : EMPTY);
  } catch (error) {
    throw new UndecodableRequestError(`not a valid protobuf ExportTraceServiceRequest (${(error as Error).message})`, { cause: error });
  }
  return {
    // protobufjs reads strings as strict UTF-8 (invalid bytes throw above), so none holds a lone surrogate.
    wellFormedText: true,
    resourceSpans: (request.resourceSpans ?? []).map((resourceSpans) => ({
      resourceAttributes: convertAttributes(resourceSpans.resource?.attributes, putKeyValue).attributes,
      scopeSpans: (resourceSpans.scopeSpans ?? []).map((scopeSpans) => ({
        scopeName: scopeSpans.scope?.name ?? '',
        scopeVersion: scopeSpans.scope?.version ?? '',
        spans: (scopeSpans.spans ?? []).map(toSpan),
      })),
    })),
  };
}

/** The binary `ExportTraceServiceResponse`; `partial_success` only when spans were rejected. */
export function encodeExportResponse(rejectedSpans: number, errorMessage: string): Uint8Array {
  const partialSuccess = rejectedSpans > 0 || errorMessage !== '' ? { rejectedSpans: Long.fromNumber(rejectedSpans), errorMessage } : null;
  return proto.collector.trace.v1.ExportTraceServiceResponse.encode({ partialSuccess }).finish();
}

/** The binary `google.rpc.Status` an OTLP/HTTP error response carries. */
export function encodeStatus(code: number, message: string): Uint8Array {
  return google.rpc.Status.encode({ code, message, details: [] }).finish();
}
