import { type JsonObject, type JsonValue, setMember } from '../../../shared/domain/json.js';
import { bracketsUpTo, MAX_JSON_CONTAINERS } from '../../../shared/domain/json-limits.js';
import { MAX_VALUE_DEPTH, type OtlpEvent, type OtlpExport, type OtlpResourceSpans, type OtlpScopeSpans, type OtlpSpan, VALUE_TOO_DEEP } from '../otlp-model.js';
import { UndecodableRequestError } from './undecodable-request-error.js';
import { I32, I64, knownFields, LEN, RECURSION_LIMIT, VARINT, WireReader } from './wire-reader.js';

/*
 * A hand-written decoder of `ExportTraceServiceRequest` (opentelemetry-proto v1.11.0, vendored in
 * third_party/opentelemetry-proto) straight into the route's model: one pass over the bytes, no message
 * objects, 64-bit times as microsecond numbers. It is held to accept, refuse and read what the protobufjs code
 * generated from the same protos does (test/support/protobufjs-export-decoder.ts, the differential tests'
 * oracle), whose rules it follows where protobuf leaves a choice (the wire-level ones: ./wire-reader.ts):
 * - a known field with another wire type is refused (see scripts/generate-otlp-codec.mjs for why);
 * - messages nest at most 100 deep, the request being depth 0;
 * - a singular message field sent twice merges (protobuf's rule): the last scalar wins, lists concatenate;
 * - an `AnyValue` holds the last of its oneof fields; an array or list sent again, no other value between, continues.
 * Protobuf's rules for merging (https://protobuf.dev/programming-guides/encoding/#last-one-wins) are the reference.
 * Every function below reads through `r`, the one reader of the decode in progress.
 */

function tooManyContainers(): never {
  throw new UndecodableRequestError(`more than ${MAX_JSON_CONTAINERS} JSON arrays and objects (bytes [ and {, which the JSON text strings hold is parsed into, and the arrays, lists, spans and events the message builds); split the export`);
}

/**
 * The most arrays and objects a body of `length` bytes can count against the budget: at most one bracket per byte,
 * and each array, list, span or event built takes its own field's tag and length, two bytes at least. A body
 * whose most is within {@link MAX_JSON_CONTAINERS} (up to 666,666 bytes) cannot be refused for them, so its
 * brackets, a fifth of the decoding time of a GenAI export, are not counted.
 */
const mostContainersIn = (length: number): number => length + Math.floor(length / 2);

/** What an `AnyValue` holds so far: its oneof's last field, which decides how the next field merges. */
const NONE = 0;
const SCALAR = 1;
const ARRAY = 2;
const KVLIST = 3;

/** One decode's reader: the wire cursor, and what this request may still build. */
class ExportReader extends WireReader {
  /** The kind of the value the last {@link readAnyValue} returned. */
  anyValueKind = NONE;

  /**
   * @param containerBudget arrays and objects this request may still build: {@link MAX_JSON_CONTAINERS} less the
   * brackets its bytes hold (the JSON text of its strings). An empty `ArrayValue`, event or span costs two or
   * three bytes and no bracket, so the decoder counts what it builds against the same bound as a JSON body's
   * brackets.
   */
  constructor(
    bytes: Uint8Array,
    private containerBudget: number,
  ) {
    super(bytes);
  }

  /** One more array or object built: over the budget, the request is refused before it builds more. */
  built(): void {
    if (--this.containerBudget < 0) tooManyContainers();
  }
}

const REQUEST = knownFields({ 1: LEN });
const RESOURCE_SPANS = knownFields({ 1: LEN, 2: LEN, 3: LEN });
const RESOURCE = knownFields({ 1: LEN, 2: VARINT, 3: LEN });
const ENTITY_REF = knownFields({ 1: LEN, 2: LEN, 3: LEN, 4: LEN });
const SCOPE_SPANS = knownFields({ 1: LEN, 2: LEN, 3: LEN });
const SCOPE = knownFields({ 1: LEN, 2: LEN, 3: LEN, 4: VARINT });
const SPAN = knownFields({ 1: LEN, 2: LEN, 3: LEN, 4: LEN, 5: LEN, 6: VARINT, 7: I64, 8: I64, 9: LEN, 10: VARINT, 11: LEN, 12: VARINT, 13: LEN, 14: VARINT, 15: LEN, 16: I32 });
const EVENT = knownFields({ 1: I64, 2: LEN, 3: LEN, 4: VARINT });
const LINK = knownFields({ 1: LEN, 2: LEN, 3: LEN, 4: LEN, 5: VARINT, 6: I32 });
const STATUS = knownFields({ 2: LEN, 3: VARINT });
const KEY_VALUE = knownFields({ 1: LEN, 2: LEN, 3: VARINT });
const ANY_VALUE = knownFields({ 1: LEN, 2: VARINT, 3: VARINT, 4: I64, 5: LEN, 6: LEN, 7: LEN, 8: VARINT });
const VALUE_LIST = knownFields({ 1: LEN });

/** An array or key-value list nested deeper than MAX_VALUE_DEPTH: it makes its attribute list unusable. */
const TOO_DEEP = Symbol('too deep');
type Decoded = JsonValue | typeof TOO_DEEP;

/**
 * An `AnyValue` at message `depth`, nested `valueDepth` arrays and lists deep (1 for an attribute's value),
 * continuing `value` of `kind` when the value field is sent again. Arrays and key-value lists nested too deep
 * are read for their validity only.
 */
function readAnyValue(r: ExportReader, end: number, depth: number, valueDepth: number, kind: number, value: Decoded): Decoded {
  if (depth > RECURSION_LIMIT) r.fail('max depth exceeded');
  while (r.pos < end) {
    const tag = r.readTag(end);
    switch (tag) {
      case 0x0a: // string_value
        value = r.readString(end);
        kind = SCALAR;
        continue;
      case 0x10: // bool_value
        value = r.readBool(end);
        kind = SCALAR;
        continue;
      case 0x18: // int_value
        value = r.readInt64Value(end);
        kind = SCALAR;
        continue;
      case 0x21: // double_value
        value = r.readDoubleValue(end);
        kind = SCALAR;
        continue;
      case 0x2a: {
        // array_value
        const stop = r.readEnd(end);
        if (kind !== ARRAY) value = valueDepth >= MAX_VALUE_DEPTH ? TOO_DEEP : (r.built(), []);
        kind = ARRAY;
        if (value === TOO_DEEP) skipValueList(r, stop, depth + 1, skipAnyValue);
        else if (readArrayInto(r, value as JsonValue[], stop, depth + 1, valueDepth + 1)) value = TOO_DEEP;
        continue;
      }
      case 0x32: {
        // kvlist_value
        const stop = r.readEnd(end);
        if (kind !== KVLIST) value = valueDepth >= MAX_VALUE_DEPTH ? TOO_DEEP : (r.built(), {});
        kind = KVLIST;
        if (value === TOO_DEEP) skipValueList(r, stop, depth + 1, skipKeyValue);
        else if (readKeyValueListInto(r, value as JsonObject, stop, depth + 1, valueDepth + 1)) value = TOO_DEEP;
        continue;
      }
      case 0x3a: // bytes_value, as base64 like protobuf JSON
        value = r.readBase64(end);
        kind = SCALAR;
        continue;
      case 0x40: // string_value_strindex: a profiles dictionary index, no value in traces
        r.readVarint32(end);
        value = null;
        kind = SCALAR;
        continue;
    }
    r.otherField(tag, end, depth, ANY_VALUE);
  }
  r.anyValueKind = kind;
  return value;
}

/** An `ArrayValue`'s items appended to `array`; true when one nests too deep. */
function readArrayInto(r: ExportReader, array: JsonValue[], end: number, depth: number, itemDepth: number): boolean {
  if (depth > RECURSION_LIMIT) r.fail('max depth exceeded');
  let tooDeep = false;
  while (r.pos < end) {
    const tag = r.readTag(end);
    if (tag === 0x0a) {
      const stop = r.readEnd(end);
      const item = readAnyValue(r, stop, depth + 1, itemDepth, NONE, null);
      if (item === TOO_DEEP) tooDeep = true;
      else array.push(item);
      continue;
    }
    r.otherField(tag, end, depth, VALUE_LIST);
  }
  return tooDeep;
}

/** A `KeyValueList`'s entries set on `object`; true when a value nests too deep. */
function readKeyValueListInto(r: ExportReader, object: JsonObject, end: number, depth: number, valueDepth: number): boolean {
  if (depth > RECURSION_LIMIT) r.fail('max depth exceeded');
  let tooDeep = false;
  while (r.pos < end) {
    const tag = r.readTag(end);
    if (tag === 0x0a) {
      const stop = r.readEnd(end);
      if (readKeyValueInto(r, object, stop, depth + 1, valueDepth)) tooDeep = true;
      continue;
    }
    r.otherField(tag, end, depth, VALUE_LIST);
  }
  return tooDeep;
}

/** A `KeyValue` set on `target` (a later key replaces an earlier one); true, and nothing set, when its value nests too deep. */
function readKeyValueInto(r: ExportReader, target: JsonObject, end: number, depth: number, valueDepth: number): boolean {
  if (depth > RECURSION_LIMIT) r.fail('max depth exceeded');
  let key = '';
  let value: Decoded = null;
  let kind = NONE;
  while (r.pos < end) {
    const tag = r.readTag(end);
    if (tag === 0x0a) {
      key = r.readString(end);
    } else if (tag === 0x12) {
      const stop = r.readEnd(end);
      value = readAnyValue(r, stop, depth + 1, valueDepth, kind, value);
      kind = r.anyValueKind;
    } else if (tag === 0x18) {
      r.readVarint32(end); // key_strindex, for profiles
    } else {
      r.otherField(tag, end, depth, KEY_VALUE);
    }
  }
  if (value === TOO_DEEP) return true;
  setMember(target, key, value);
  return false;
}

/** An `AnyValue` read for its validity only (instrumentation scope and link attributes, values nested too deep). */
function skipAnyValue(r: ExportReader, end: number, depth: number): void {
  if (depth > RECURSION_LIMIT) r.fail('max depth exceeded');
  while (r.pos < end) {
    const tag = r.readTag(end);
    if (tag === 0x0a) r.skipString(end);
    else if (tag === 0x10 || tag === 0x18 || tag === 0x40) r.readVarint64(end);
    else if (tag === 0x21) r.skipBytes(8, end);
    else if (tag === 0x2a) skipValueList(r, r.readEnd(end), depth + 1, skipAnyValue);
    else if (tag === 0x32) skipValueList(r, r.readEnd(end), depth + 1, skipKeyValue);
    else if (tag === 0x3a) r.pos = r.readEnd(end);
    else r.otherField(tag, end, depth, ANY_VALUE);
  }
}

function skipKeyValue(r: ExportReader, end: number, depth: number): void {
  if (depth > RECURSION_LIMIT) r.fail('max depth exceeded');
  while (r.pos < end) {
    const tag = r.readTag(end);
    if (tag === 0x0a) r.skipString(end);
    else if (tag === 0x12) skipAnyValue(r, r.readEnd(end), depth + 1);
    else if (tag === 0x18) r.readVarint32(end);
    else r.otherField(tag, end, depth, KEY_VALUE);
  }
}

/** An `ArrayValue` or `KeyValueList` (field 1 repeated) read for its validity only. */
function skipValueList(r: ExportReader, end: number, depth: number, skipItem: (r: ExportReader, end: number, depth: number) => void): void {
  if (depth > RECURSION_LIMIT) r.fail('max depth exceeded');
  while (r.pos < end) {
    const tag = r.readTag(end);
    if (tag === 0x0a) skipItem(r, r.readEnd(end), depth + 1);
    else r.otherField(tag, end, depth, VALUE_LIST);
  }
}

/** A list of attributes being read: the span's, an event's or the resource's. */
interface Attributes {
  object: JsonObject;
  tooDeep: boolean;
}

function readAttribute(r: ExportReader, attributes: Attributes, end: number, depth: number): void {
  if (readKeyValueInto(r, attributes.object, r.readEnd(end), depth, 1)) attributes.tooDeep = true;
}

/** The attributes as the model holds them: none when one nests too deep (the span then carries the problem). */
const usable = (attributes: Attributes): JsonObject => (attributes.tooDeep ? {} : attributes.object);

function readEvent(r: ExportReader, end: number): { event: OtlpEvent; tooDeep: boolean } {
  let name = '';
  let timeUnixMicros = 0;
  const attributes: Attributes = { object: {}, tooDeep: false };
  while (r.pos < end) {
    const tag = r.readTag(end);
    if (tag === 0x09) timeUnixMicros = r.readMicros(end);
    else if (tag === 0x12) name = r.readString(end);
    else if (tag === 0x1a) readAttribute(r, attributes, end, 5);
    else if (tag === 0x20) r.readVarint32(end); // dropped_attributes_count
    else r.otherField(tag, end, 4, EVENT);
  }
  return { event: { name, timeUnixMicros, attributes: usable(attributes) }, tooDeep: attributes.tooDeep };
}

/** A link is not stored: read for its validity only. */
function skipLink(r: ExportReader, end: number): void {
  while (r.pos < end) {
    const tag = r.readTag(end);
    if (tag === 0x0a || tag === 0x12) r.pos = r.readEnd(end); // trace_id, span_id
    else if (tag === 0x1a) r.skipString(end); // trace_state
    else if (tag === 0x22) skipKeyValue(r, r.readEnd(end), 5);
    else if (tag === 0x28) r.readVarint32(end); // dropped_attributes_count
    else if (tag === 0x35) r.skipBytes(4, end); // flags
    else r.otherField(tag, end, 4, LINK);
  }
}

function readSpan(r: ExportReader, end: number): OtlpSpan {
  let traceId = '';
  let spanId = '';
  let parentSpanId = '';
  let name = '';
  let kind = 0;
  let startTimeUnixMicros = 0;
  let endTimeUnixMicros = 0;
  let statusCode = 0;
  let statusMessage = '';
  let traceState = '';
  const attributes: Attributes = { object: {}, tooDeep: false };
  const events: OtlpEvent[] = [];
  let eventTooDeep = false;
  while (r.pos < end) {
    const tag = r.readTag(end);
    switch (tag) {
      case 0x0a:
        traceId = r.readRepeatedHex(end);
        continue;
      case 0x12:
        spanId = r.readHex(end);
        continue;
      case 0x1a:
        traceState = r.readString(end);
        continue;
      case 0x22:
        parentSpanId = r.readRepeatedHex(end);
        continue;
      case 0x2a:
        name = r.readString(end);
        continue;
      case 0x30:
        kind = r.readVarint32(end) | 0;
        continue;
      case 0x39:
        startTimeUnixMicros = r.readMicros(end);
        continue;
      case 0x41:
        endTimeUnixMicros = r.readMicros(end);
        continue;
      case 0x4a:
        readAttribute(r, attributes, end, 4);
        continue;
      case 0x5a: {
        r.built();
        const read = readEvent(r, r.readEnd(end));
        events.push(read.event);
        if (read.tooDeep) eventTooDeep = true;
        continue;
      }
      case 0x50: // dropped_attributes_count
      case 0x60: // dropped_events_count
      case 0x70: // dropped_links_count
        r.readVarint32(end);
        continue;
      case 0x6a:
        skipLink(r, r.readEnd(end));
        continue;
      case 0x7a: {
        // status; sent twice, it merges: the last code and message win
        const stop = r.readEnd(end);
        while (r.pos < stop) {
          const statusTag = r.readTag(stop);
          if (statusTag === 0x12) statusMessage = r.readString(stop);
          else if (statusTag === 0x18) statusCode = r.readVarint32(stop) | 0;
          else r.otherField(statusTag, stop, 4, STATUS);
        }
        continue;
      }
      case 0x85: // flags (field 16, fixed32)
        r.skipBytes(4, end);
        continue;
    }
    r.otherField(tag, end, 3, SPAN);
  }
  const span: OtlpSpan = {
    traceId,
    spanId,
    parentSpanId,
    name,
    kind,
    startTimeUnixMicros,
    endTimeUnixMicros,
    statusCode,
    statusMessage,
    traceState,
    attributes: usable(attributes),
    events,
  };
  if (attributes.tooDeep || eventTooDeep) span.problem = VALUE_TOO_DEEP;
  return span;
}

function readScopeSpans(r: ExportReader, end: number): OtlpScopeSpans {
  let scopeName = '';
  let scopeVersion = '';
  const spans: OtlpSpan[] = [];
  while (r.pos < end) {
    const tag = r.readTag(end);
    if (tag === 0x12) {
      r.built();
      spans.push(readSpan(r, r.readEnd(end)));
    } else if (tag === 0x0a) {
      // scope; sent twice, it merges
      const stop = r.readEnd(end);
      while (r.pos < stop) {
        const scopeTag = r.readTag(stop);
        if (scopeTag === 0x0a) scopeName = r.readString(stop);
        else if (scopeTag === 0x12) scopeVersion = r.readString(stop);
        else if (scopeTag === 0x1a) skipKeyValue(r, r.readEnd(stop), 4);
        else if (scopeTag === 0x20) r.readVarint32(stop); // dropped_attributes_count
        else r.otherField(scopeTag, stop, 3, SCOPE);
      }
    } else if (tag === 0x1a) {
      r.skipString(end); // schema_url
    } else {
      r.otherField(tag, end, 2, SCOPE_SPANS);
    }
  }
  return { scopeName, scopeVersion, spans };
}

function readResourceSpans(r: ExportReader, end: number): OtlpResourceSpans {
  const attributes: Attributes = { object: {}, tooDeep: false };
  const scopeSpans: OtlpScopeSpans[] = [];
  while (r.pos < end) {
    const tag = r.readTag(end);
    if (tag === 0x12) {
      scopeSpans.push(readScopeSpans(r, r.readEnd(end)));
    } else if (tag === 0x0a) {
      // resource; sent twice, it merges: the attribute lists concatenate
      const stop = r.readEnd(end);
      while (r.pos < stop) {
        const resourceTag = r.readTag(stop);
        if (resourceTag === 0x0a) readAttribute(r, attributes, stop, 3);
        else if (resourceTag === 0x10) r.readVarint32(stop); // dropped_attributes_count
        else if (resourceTag === 0x1a) skipEntityRef(r, r.readEnd(stop), 3);
        else r.otherField(resourceTag, stop, 2, RESOURCE);
      }
    } else if (tag === 0x1a) {
      r.skipString(end); // schema_url
    } else {
      r.otherField(tag, end, 1, RESOURCE_SPANS);
    }
  }
  return { resourceAttributes: usable(attributes), scopeSpans };
}

/** An `EntityRef` (fields 1 to 4, all strings) read for its validity only. */
function skipEntityRef(r: ExportReader, end: number, depth: number): void {
  while (r.pos < end) {
    const tag = r.readTag(end);
    if (tag === 0x0a || tag === 0x12 || tag === 0x1a || tag === 0x22) r.skipString(end);
    else r.otherField(tag, end, depth, ENTITY_REF);
  }
}

/**
 * Decodes an OTLP/HTTP binary protobuf body (`ExportTraceServiceRequest`). Unknown fields are skipped as
 * protobuf requires; truncated data, wrong wire types, invalid UTF-8 and nesting past the recursion limit
 * throw {@link UndecodableRequestError}. Each call reads with its own {@link ExportReader}: nothing is kept
 * between calls, and calls may interleave.
 */
export function decodeExportRequest(bytes: Uint8Array): OtlpExport {
  const containerBudget = mostContainersIn(bytes.length) <= MAX_JSON_CONTAINERS ? MAX_JSON_CONTAINERS : MAX_JSON_CONTAINERS - bracketsUpTo(bytes, MAX_JSON_CONTAINERS);
  if (containerBudget < 0) tooManyContainers();
  const r = new ExportReader(bytes, containerBudget);
  const end = bytes.length;
  const resourceSpans: OtlpResourceSpans[] = [];
  while (r.pos < end) {
    const tag = r.readTag(end);
    if (tag === 0x0a) resourceSpans.push(readResourceSpans(r, r.readEnd(end)));
    else r.otherField(tag, end, 0, REQUEST);
  }
  // Strings are strict UTF-8 (invalid bytes throw), so none holds a lone surrogate.
  return { wellFormedText: true, resourceSpans };
}
