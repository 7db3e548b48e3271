import Long from 'long';
import $protobuf from 'protobufjs/minimal.js';
import { opentelemetry } from '../../devkit/generated/otlp-trace.js';
import { assembleSpan, checkNestingDepth, convertAttributes, type OtlpExport, type OtlpSpan } from '../../lambda/ingest/otlp/otlp-model.js';
import { type JsonObject, type JsonValue, setMember } from '../../lambda/shared/domain/json.js';

/**
 * The test oracle of the hand-written protobuf decoder (lambda/ingest/otlp/protobuf/decode-export-request.ts): the decoding the
 * route did before it, with the code protobufjs generates from the official protos (message objects, 64-bit
 * values as `Long`), then converted to the route's model. Differential tests decode the same bytes both ways.
 */

// 64-bit fields decode to exact Long values instead of doubles that lose the nanoseconds.
$protobuf.util.Long = Long;
$protobuf.configure();

type AnyValue = opentelemetry.proto.common.v1.AnyValue.$Properties;
type KeyValue = opentelemetry.proto.common.v1.KeyValue.$Properties;
type Span = opentelemetry.proto.trace.v1.Span.$Properties;

const EMPTY = new Uint8Array(0);
const hex = (bytes: Uint8Array | null | undefined): string =>
  bytes && bytes.length > 0 ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex') : '';

/** Whole microseconds of fixed64 nanoseconds, through BigInt: exact, rounded only by the final `Number`. */
function toMicros(value: Long | number | null | undefined): number {
  if (value === null || value === undefined) return 0;
  const nanos = typeof value === 'number' ? BigInt(Math.trunc(value)) : (BigInt(value.high >>> 0) << 32n) | BigInt(value.low >>> 0);
  return Number(nanos / 1000n);
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
    for (const kv of value.kvlistValue.values ?? []) setMember(object, kv.key ?? '', anyValue(kv.value, depth + 1));
    return object;
  }
  return null;
}

const putKeyValue = (kv: KeyValue, target: JsonObject): void => {
  setMember(target, kv.key ?? '', anyValue(kv.value, 1));
};

function toSpan(span: Span): OtlpSpan {
  return assembleSpan(
    {
      traceId: hex(span.traceId),
      spanId: hex(span.spanId),
      parentSpanId: hex(span.parentSpanId),
      name: span.name ?? '',
      kind: span.kind ?? 0,
      startTimeUnixMicros: toMicros(span.startTimeUnixNano),
      endTimeUnixMicros: toMicros(span.endTimeUnixNano),
      statusCode: span.status?.code ?? 0,
      statusMessage: span.status?.message ?? '',
      traceState: span.traceState ?? '',
    },
    convertAttributes(span.attributes, putKeyValue),
    (span.events ?? []).map((event) => ({
      name: event.name ?? '',
      timeUnixMicros: toMicros(event.timeUnixNano),
      converted: convertAttributes(event.attributes, putKeyValue),
    })),
  );
}

/** Decodes like the route's decoder, throwing protobufjs's own errors for bodies it cannot decode. */
export function decodeWithProtobufjs(bytes: Uint8Array): OtlpExport {
  const request = opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest.decode(bytes.length > 0 ? bytes : EMPTY);
  return {
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
