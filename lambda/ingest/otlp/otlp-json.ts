import { describeValue, jsonSyntaxReason } from '../../shared/domain/describe-value.js';
import { isJsonObject as isObject, type JsonObject, type JsonValue, setMember } from '../../shared/domain/json.js';
import { exceedsContainerLimit, MAX_JSON_CONTAINERS } from '../../shared/domain/json-limits.js';
import { mayHoldLoneSurrogates } from '../core/validation/well-formed.js';
import { assembleSpan, checkNestingDepth, type ConvertedAttributes, convertAttributes, type OtlpExport, type OtlpSpan } from './otlp-model.js';
import { UndecodableRequestError } from './protobuf/undecodable-request-error.js';

/** A member by its lowerCamelCase JSON name or, as protobuf JSON parsers also accept, its proto name. */
function member(object: JsonObject, camel: string, snake: string): unknown {
  const value = object[camel];
  return value === undefined ? object[snake] : value;
}

function objectAt(object: JsonObject, camel: string, snake: string, path: string): JsonObject | undefined {
  const value = member(object, camel, snake);
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw new UndecodableRequestError(`${path}/${camel} must be an object`);
  return value;
}

function arrayAt(object: JsonObject, camel: string, snake: string, path: string): unknown[] {
  const value = member(object, camel, snake);
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new UndecodableRequestError(`${path}/${camel} must be an array`);
  return value;
}

function stringAt(object: JsonObject, camel: string, snake: string, path: string): string {
  const value = member(object, camel, snake);
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw new UndecodableRequestError(`${path}/${camel} must be a string`);
  return value;
}

const UINT64 = /^\d{1,20}$/;
const INT64 = /^-?\d{1,19}$/;

/**
 * Whole microseconds of a whole number of nanoseconds held by a double. Below 2^53 the division is exact
 * enough (it never rounds across an integer); past it, the double division can land on a neighbour, so the
 * quotient is taken exactly and rounded once, as the protobuf decoder's is.
 */
function microsOfWholeNanos(nanos: number): number {
  return Number.isSafeInteger(nanos) ? Math.floor(nanos / 1000) : Number(BigInt(nanos) / 1000n);
}

/**
 * A `fixed64` nanosecond time, a decimal string or a JSON number (OTLP/JSON allows both), in whole
 * microseconds: the digits but the last three, so exact below 2^53 µs and, past that, rounded once
 * to the nearest double, as the protobuf decoder does.
 */
function microsAt(object: JsonObject, camel: string, snake: string, path: string): number {
  const value = member(object, camel, snake);
  if (value === undefined || value === null) return 0;
  if (typeof value === 'string' && UINT64.test(value)) return value.length > 3 ? Number(value.slice(0, -3)) : 0;
  // Below 1e20, as a 20-digit string: far past any date the validation accepts, yet inside what Date can hold.
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0 && value < 1e20) return microsOfWholeNanos(Math.trunc(value));
  throw new UndecodableRequestError(`${path}/${camel} must be an unsigned 64-bit integer (a decimal string or number)`);
}

/** An enum: its integer, as OTLP/JSON requires, or its name from `names`. */
function enumAt(object: JsonObject, camel: string, snake: string, path: string, names: readonly string[]): number {
  const value = member(object, camel, snake);
  if (value === undefined || value === null) return 0;
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && names.includes(value)) return names.indexOf(value);
  throw new UndecodableRequestError(`${path}/${camel} must be an enum integer`);
}

const SPAN_KIND_NAMES = ['SPAN_KIND_UNSPECIFIED', 'SPAN_KIND_INTERNAL', 'SPAN_KIND_SERVER', 'SPAN_KIND_CLIENT', 'SPAN_KIND_PRODUCER', 'SPAN_KIND_CONSUMER'];
const STATUS_CODE_NAMES = ['STATUS_CODE_UNSET', 'STATUS_CODE_OK', 'STATUS_CODE_ERROR'];
const HEX = /^[0-9a-fA-F]*$/;

/**
 * Hex ids (OTLP/JSON's deviation from protobuf JSON); anything else becomes `(invalid: a string of N characters)`,
 * which the mapping rejects (it is not hex, whatever its length) and names the span by in the partial-success
 * message: the response is kept 24 h in the idempotency record, so it never quotes what was sent.
 */
function idAt(object: JsonObject, camel: string, snake: string, path: string): string {
  const value = stringAt(object, camel, snake, path);
  return HEX.test(value) ? value.toLowerCase() : `(invalid: ${describeValue(value)})`;
}

function anyValue(value: unknown, path: string, depth: number): JsonValue {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) throw new UndecodableRequestError(`${path} must be an AnyValue object`);
  if (typeof value.stringValue === 'string') return value.stringValue;
  if (typeof value.boolValue === 'boolean') return value.boolValue;
  const int = value.intValue;
  if (int !== undefined && int !== null) {
    if (typeof int === 'number' && Number.isInteger(int)) return int;
    if (typeof int === 'string' && INT64.test(int)) return Number.isSafeInteger(Number(int)) ? Number(int) : int;
    throw new UndecodableRequestError(`${path}/intValue must be a 64-bit integer`);
  }
  const double = value.doubleValue;
  if (double !== undefined && double !== null) {
    if (typeof double === 'number') return double;
    // Protobuf JSON spells the non-finite doubles as strings.
    if (double === 'NaN' || double === 'Infinity' || double === '-Infinity') return double;
    throw new UndecodableRequestError(`${path}/doubleValue must be a number`);
  }
  if (typeof value.bytesValue === 'string') return value.bytesValue;
  const array = value.arrayValue;
  const kvlist = value.kvlistValue;
  if ((array !== undefined && array !== null) || (kvlist !== undefined && kvlist !== null)) {
    checkNestingDepth(depth);
    if (array !== undefined && array !== null) {
      if (!isObject(array)) throw new UndecodableRequestError(`${path}/arrayValue must be an object`);
      return arrayAt(array, 'values', 'values', `${path}/arrayValue`).map((item, i) => anyValue(item, `${path}/arrayValue/values/${i}`, depth + 1));
    }
    if (!isObject(kvlist)) throw new UndecodableRequestError(`${path}/kvlistValue must be an object`);
    const object: JsonObject = {};
    arrayAt(kvlist, 'values', 'values', `${path}/kvlistValue`).forEach((kv, i) => putKeyValue(kv, object, `${path}/kvlistValue/values/${i}`, depth + 1));
    return object;
  }
  return null;
}

function putKeyValue(kv: unknown, target: JsonObject, path: string, depth: number): void {
  if (!isObject(kv)) throw new UndecodableRequestError(`${path} must be a KeyValue object`);
  setMember(target, stringAt(kv, 'key', 'key', path), anyValue(kv.value, `${path}/value`, depth));
}

function attributesOf(object: JsonObject, path: string): ConvertedAttributes {
  const list = arrayAt(object, 'attributes', 'attributes', path);
  return convertAttributes(
    list.map((kv, i) => [kv, i] as const),
    ([kv, i], target) => putKeyValue(kv, target, `${path}/attributes/${i}`, 1),
  );
}

function toSpan(value: unknown, path: string): OtlpSpan {
  if (!isObject(value)) throw new UndecodableRequestError(`${path} must be a Span object`);
  const attributes = attributesOf(value, path);
  const events = arrayAt(value, 'events', 'events', path).map((event, i) => {
    const eventPath = `${path}/events/${i}`;
    if (!isObject(event)) throw new UndecodableRequestError(`${eventPath} must be an Event object`);
    return {
      name: stringAt(event, 'name', 'name', eventPath),
      timeUnixMicros: microsAt(event, 'timeUnixNano', 'time_unix_nano', eventPath),
      converted: attributesOf(event, eventPath),
    };
  });
  const status = objectAt(value, 'status', 'status', path) ?? {};
  const fields = {
    traceId: idAt(value, 'traceId', 'trace_id', path),
    spanId: idAt(value, 'spanId', 'span_id', path),
    parentSpanId: idAt(value, 'parentSpanId', 'parent_span_id', path),
    name: stringAt(value, 'name', 'name', path),
    kind: enumAt(value, 'kind', 'kind', path, SPAN_KIND_NAMES),
    startTimeUnixMicros: microsAt(value, 'startTimeUnixNano', 'start_time_unix_nano', path),
    endTimeUnixMicros: microsAt(value, 'endTimeUnixNano', 'end_time_unix_nano', path),
    statusCode: enumAt(status, 'code', 'code', `${path}/status`, STATUS_CODE_NAMES),
    statusMessage: stringAt(status, 'message', 'message', `${path}/status`),
    traceState: stringAt(value, 'traceState', 'trace_state', path),
  };
  return assembleSpan(fields, attributes, events);
}

/**
 * Decodes an OTLP/JSON body: the protobuf JSON mapping of `ExportTraceServiceRequest` with OTLP's
 * deviations (hex trace and span ids, enums as integers, 64-bit integers as strings or numbers).
 * Unknown members are ignored; a member of the wrong JSON type throws {@link UndecodableRequestError}
 * naming its JSON Pointer.
 */
export function decodeExportRequestJson(text: string): OtlpExport {
  if (exceedsContainerLimit(text)) {
    throw new UndecodableRequestError(`more than ${MAX_JSON_CONTAINERS} JSON arrays and objects (every [ and { counts, also inside strings); split the export`);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new UndecodableRequestError(`not valid JSON (${jsonSyntaxReason(error)})`, { cause: error });
  }
  if (!isObject(body)) throw new UndecodableRequestError('the body must be a JSON ExportTraceServiceRequest object');
  return {
    wellFormedText: !mayHoldLoneSurrogates(text),
    resourceSpans: arrayAt(body, 'resourceSpans', 'resource_spans', '').map((resourceSpans, r) => {
      const rPath = `/resourceSpans/${r}`;
      if (!isObject(resourceSpans)) throw new UndecodableRequestError(`${rPath} must be an object`);
      const resource = objectAt(resourceSpans, 'resource', 'resource', rPath) ?? {};
      return {
        resourceAttributes: attributesOf(resource, `${rPath}/resource`).attributes,
        scopeSpans: arrayAt(resourceSpans, 'scopeSpans', 'scope_spans', rPath).map((scopeSpans, s) => {
          const sPath = `${rPath}/scopeSpans/${s}`;
          if (!isObject(scopeSpans)) throw new UndecodableRequestError(`${sPath} must be an object`);
          const scope = objectAt(scopeSpans, 'scope', 'scope', sPath) ?? {};
          return {
            scopeName: stringAt(scope, 'name', 'name', `${sPath}/scope`),
            scopeVersion: stringAt(scope, 'version', 'version', `${sPath}/scope`),
            spans: arrayAt(scopeSpans, 'spans', 'spans', sPath).map((span, i) => toSpan(span, `${sPath}/spans/${i}`)),
          };
        }),
      };
    }),
  };
}

/** The JSON `ExportTraceServiceResponse`; `partialSuccess` only when spans were rejected. */
export function exportResponseJson(rejectedSpans: number, errorMessage: string): string {
  if (rejectedSpans === 0 && errorMessage === '') return '{}';
  return JSON.stringify({ partialSuccess: { rejectedSpans: String(rejectedSpans), errorMessage } });
}
