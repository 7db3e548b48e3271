import { isUtf8 } from 'node:buffer';
import Long from 'long';
import $protobuf from 'protobufjs/minimal.js';
import { type JsonObject, type JsonValue, setMember } from '../../../shared/domain/json.js';
import { bracketsUpTo, MAX_JSON_CONTAINERS } from '../../../shared/domain/json-limits.js';
import { google, opentelemetry } from '../../generated/otlp-trace.js';
import { MAX_VALUE_DEPTH, type OtlpEvent, type OtlpExport, type OtlpResourceSpans, type OtlpScopeSpans, type OtlpSpan, VALUE_TOO_DEEP } from '../otlp-model.js';

/** Thrown for a body that is not an `ExportTraceServiceRequest`. */
export class UndecodableRequestError extends Error {
  override name = 'UndecodableRequestError';
}

/*
 * A hand-written decoder of `ExportTraceServiceRequest` (opentelemetry-proto v1.11.0, vendored in
 * third_party/opentelemetry-proto) straight into the route's model: one pass over the bytes, no message
 * objects, 64-bit times as microsecond numbers, strings sliced natively. It is held to accept, refuse and read
 * what the protobufjs code generated from the same protos does (test/support/protobufjs-export-decoder.ts, the
 * differential tests' oracle), whose rules it follows where protobuf leaves a choice:
 * - a varint value may take 10 bytes, a tag 5 (the 5th below 16), a length 5 (the 5th below 8, so under 2^31);
 * - a known field with another wire type is refused (see scripts/generate-otlp-codec.mjs for why);
 * - unknown fields of every wire type are skipped, groups included (their end tag must match; field 0 never);
 * - messages nest at most 100 deep, the request being depth 0, and a group's fields count one level deeper;
 * - a singular message field sent twice merges (protobuf's rule): the last scalar wins, lists concatenate;
 * - an `AnyValue` holds the last of its oneof fields; an array or list sent again, no other value between, continues.
 * Protobuf encoding (https://protobuf.dev/programming-guides/encoding/) and its rules for merging
 * (https://protobuf.dev/programming-guides/encoding/#last-one-wins) are the reference.
 */

/** protobufjs's recursion limit, protoc's default (CodedInputStream::default_recursion_limit_). */
const RECURSION_LIMIT = 100;

const VARINT = 0;
const I64 = 1;
const LEN = 2;
const GROUP_START = 3;
const GROUP_END = 4;
const I32 = 5;

/** Buffer's native slicers, which `toString(encoding, start, end)` calls after checking its arguments. */
interface NativeSlices {
  utf8Slice(start: number, end: number): string;
  hexSlice(start: number, end: number): string;
  base64Slice(start: number, end: number): string;
}

const NO_BYTES = Buffer.alloc(0) as Buffer & NativeSlices;

// The body being decoded and the read position: the decoder is synchronous, so one pair serves every call.
let buf = NO_BYTES;
let pos = 0;

/**
 * Arrays and objects this request may still build: {@link MAX_JSON_CONTAINERS} less the brackets its bytes hold
 * (the JSON text of its strings). An empty `ArrayValue`, event or span costs two or three bytes and no bracket,
 * so the decoder counts what it builds against the same bound as a JSON body's brackets.
 */
let containerBudget = 0;

function tooManyContainers(): never {
  throw new UndecodableRequestError(`more than ${MAX_JSON_CONTAINERS} JSON arrays and objects (bytes [ and {, which the JSON text strings hold is parsed into, and the arrays, lists, spans and events the message builds); split the export`);
}

/** One more array or object built: over the budget, the request is refused before it builds more. */
function built(): void {
  if (--containerBudget < 0) tooManyContainers();
}

function fail(reason: string): never {
  throw new UndecodableRequestError(`not a valid protobuf ExportTraceServiceRequest (${reason})`);
}

function outOfRange(): never {
  fail(`index out of range at offset ${pos}`);
}

/** A field's tag, `pos` being before `end`: at most 5 bytes. */
function readTag(end: number): number {
  const first = buf[pos]!;
  if (first < 0x80) {
    pos++;
    return first;
  }
  let value = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (pos >= end) outOfRange();
    const byte = buf[pos++]!;
    value |= (byte & 0x7f) << shift;
    if (byte < 0x80) return value >>> 0;
  }
  if (pos >= end) outOfRange();
  const last = buf[pos++]!;
  if (last > 0x0f) fail('invalid tag encoding');
  return (value | (last << 28)) >>> 0;
}

/** A length prefix, at most 5 bytes and below 2^31, and the end of the bytes it counts, which must fit in `end`. */
function readEnd(end: number): number {
  if (pos >= end) outOfRange();
  let byte = buf[pos++]!;
  let length = byte;
  if (byte >= 0x80) {
    length &= 0x7f;
    let shift = 7;
    for (; shift < 28; shift += 7) {
      if (pos >= end) outOfRange();
      byte = buf[pos++]!;
      length |= (byte & 0x7f) << shift;
      if (byte < 0x80) break;
    }
    if (shift === 28) {
      if (pos >= end) outOfRange();
      byte = buf[pos++]!;
      if (byte > 7) fail('invalid length encoding');
      length = (length | (byte << 28)) >>> 0;
    }
  }
  const stop = pos + length;
  if (stop > end) outOfRange();
  return stop;
}

/** A varint value's low 32 bits (an `int32`, `uint32` or enum), the varint taking at most 10 bytes. */
function readVarint32(end: number): number {
  if (pos >= end) outOfRange();
  let byte = buf[pos++]!;
  if (byte < 0x80) return byte;
  let value = byte & 0x7f;
  for (let shift = 7; shift < 70; shift += 7) {
    if (pos >= end) outOfRange();
    byte = buf[pos++]!;
    // Past the fifth byte the bits are beyond 32; a shift of 28 keeps the low 4 bits of the fifth.
    if (shift < 32) value |= (byte & 0x7f) << shift;
    if (byte < 0x80) return value >>> 0;
  }
  fail('invalid varint encoding');
}

/** The high 32 bits of the last {@link readVarint64}. */
let high32 = 0;

/** A varint of at most 10 bytes: returns its low 32 bits, leaves the high 32 in {@link high32}. */
function readVarint64(end: number): number {
  high32 = 0;
  if (pos >= end) outOfRange();
  let byte = buf[pos++]!;
  if (byte < 0x80) return byte;
  let low = byte & 0x7f;
  for (let shift = 7; shift < 28; shift += 7) {
    if (pos >= end) outOfRange();
    byte = buf[pos++]!;
    low |= (byte & 0x7f) << shift;
    if (byte < 0x80) return low >>> 0;
  }
  if (pos >= end) outOfRange();
  byte = buf[pos++]!;
  low = (low | ((byte & 0x7f) << 28)) >>> 0;
  let high = (byte & 0x7f) >> 4;
  if (byte < 0x80) {
    high32 = high;
    return low;
  }
  for (let shift = 3; shift < 38; shift += 7) {
    if (pos >= end) outOfRange();
    byte = buf[pos++]!;
    high |= (byte & 0x7f) << shift;
    if (byte < 0x80) {
      high32 = high >>> 0;
      return low;
    }
  }
  fail('invalid varint encoding');
}

function readBool(end: number): boolean {
  let value = false;
  for (let i = 0; i < 10; i++) {
    if (pos >= end) outOfRange();
    const byte = buf[pos++]!;
    if (byte & 0x7f) value = true;
    if (byte < 0x80) return value;
  }
  fail('invalid varint encoding');
}

function skipBytes(count: number, end: number): void {
  if (pos + count > end) outOfRange();
  pos += count;
}

const TWO_TO_32 = 4294967296;

/**
 * A fixed64 of nanoseconds in whole microseconds. The quotient is split at the high word so that each part
 * is exact; their sum is then exact below 2^53 µs and otherwise rounded once, as `Number(nanos / 1000n)` is.
 */
function readMicros(end: number): number {
  if (pos + 8 > end) outOfRange();
  const low = (buf[pos]! | (buf[pos + 1]! << 8) | (buf[pos + 2]! << 16) | (buf[pos + 3]! << 24)) >>> 0;
  const high = (buf[pos + 4]! | (buf[pos + 5]! << 8) | (buf[pos + 6]! << 16) | (buf[pos + 7]! << 24)) >>> 0;
  pos += 8;
  if (high === 0) return Math.floor(low / 1000);
  const highRest = high % 1000;
  return ((high - highRest) / 1000) * TWO_TO_32 + Math.floor((highRest * TWO_TO_32 + low) / 1000);
}

/** An int64 attribute value: a number when it is a safe integer, else its decimal string (exact). */
function readIntValue(end: number): number | string {
  const low = readVarint64(end);
  const value = (high32 | 0) * TWO_TO_32 + low;
  return Number.isSafeInteger(value) ? value : BigInt.asIntN(64, (BigInt(high32) << 32n) | BigInt(low)).toString();
}

/** A double attribute value; JSON has no NaN or infinities, so those are their names. */
function readDoubleValue(end: number): number | string {
  if (pos + 8 > end) outOfRange();
  const value = buf.readDoubleLE(pos);
  pos += 8;
  return Number.isFinite(value) ? value : String(value);
}

/**
 * The text of `[start, stop)`, which protobuf requires to be UTF-8. Slicing decodes every invalid sequence to
 * U+FFFD (as the WHATWG decoder does; the tests hold it to a fatal TextDecoder), so only a text holding one
 * needs the strict check, which costs a view and a native call.
 */
function utf8At(start: number, stop: number): string {
  const text = buf.utf8Slice(start, stop);
  if (text.includes('\uFFFD') && !isUtf8(buf.subarray(start, stop))) fail(`invalid UTF-8 in the string at offset ${start}`);
  return text;
}

/**
 * Recently decoded short strings and ids by their bytes. An export repeats its attribute keys, span names,
 * models and trace ids span after span; hashing and comparing a few bytes costs less than a native slice, and
 * the one string per key then indexes the mapping's objects without being hashed again. Direct-mapped and
 * bounded (a slot keeps the last bytes hashed to it); bytes are compared in full, so a hit is always exact.
 */
const CACHE_SLOTS = 1024;
const MAX_CACHED_BYTES = 48;
const cachedBytes = new Uint8Array(CACHE_SLOTS * MAX_CACHED_BYTES);
const cachedLengths = new Int32Array(CACHE_SLOTS).fill(-1);
const cachedTexts: string[] = new Array<string>(CACHE_SLOTS).fill('');
// Hex and UTF-8 texts of the same bytes differ: the kind is hashed in and kept with the length.
const UTF8 = 0;
const HEX = 1 << 16;

function cachedText(start: number, stop: number, kind: number): string {
  const length = stop - start;
  // FNV-1a of the length and five of the bytes, ends and middle, for speed: a collision only costs a miss.
  const last = stop - 1;
  const quarter = length >> 2;
  let hash = Math.imul(0x811c9dc5 ^ (length | kind), 0x01000193);
  hash = Math.imul(hash ^ buf[start]!, 0x01000193);
  hash = Math.imul(hash ^ buf[last]!, 0x01000193);
  hash = Math.imul(hash ^ buf[start + (length >> 1)]!, 0x01000193);
  hash = Math.imul(hash ^ buf[start + quarter]!, 0x01000193);
  hash = Math.imul(hash ^ buf[last - quarter]!, 0x01000193);
  const slot = (hash ^ (hash >>> 16)) & (CACHE_SLOTS - 1);
  const at = slot * MAX_CACHED_BYTES;
  if (cachedLengths[slot] === (length | kind)) {
    let i = 0;
    while (i < length && cachedBytes[at + i] === buf[start + i]) i++;
    if (i === length) return cachedTexts[slot]!;
  }
  const text = kind === HEX ? buf.hexSlice(start, stop) : utf8At(start, stop);
  for (let i = 0; i < length; i++) cachedBytes[at + i] = buf[start + i]!;
  cachedLengths[slot] = length | kind;
  cachedTexts[slot] = text;
  return text;
}

/** A string field. */
function readString(end: number): string {
  const stop = readEnd(end);
  const start = pos;
  pos = stop;
  if (start === stop) return '';
  return stop - start <= MAX_CACHED_BYTES ? cachedText(start, stop, UTF8) : utf8At(start, stop);
}

/** A string field read for its validity only. */
function skipString(end: number): void {
  const stop = readEnd(end);
  const start = pos;
  pos = stop;
  if (start !== stop && !isUtf8(buf.subarray(start, stop))) fail(`invalid UTF-8 in the string at offset ${start}`);
}

/** A bytes field as lower-case hex: trace and parent span ids, which repeat from span to span. */
function readRepeatedHex(end: number): string {
  const stop = readEnd(end);
  const start = pos;
  pos = stop;
  if (start === stop) return '';
  return stop - start <= MAX_CACHED_BYTES ? cachedText(start, stop, HEX) : buf.hexSlice(start, stop);
}

/** A bytes field as lower-case hex: span ids, which do not repeat. */
function readHex(end: number): string {
  const stop = readEnd(end);
  const start = pos;
  pos = stop;
  return start === stop ? '' : buf.hexSlice(start, stop);
}

/** The wire type each known field of a message must have, by field number. */
type KnownFields = readonly (number | undefined)[];

function knownFields(fields: Record<number, number>): KnownFields {
  const known: (number | undefined)[] = [];
  for (const [field, wireType] of Object.entries(fields)) known[Number(field)] = wireType;
  return known;
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

/** A field the message's decoder did not take: a known one has the wrong wire type; an unknown one is skipped. */
function otherField(tag: number, end: number, depth: number, known: KnownFields): void {
  const field = tag >>> 3;
  const expected = known[field];
  if (expected !== undefined) fail(`field ${field} has wire type ${tag & 7}, expected ${expected}`);
  skipField(tag & 7, field, end, depth);
}

function skipField(wireType: number, field: number, end: number, depth: number): void {
  if (depth > RECURSION_LIMIT) fail('max depth exceeded');
  if (field === 0) fail('illegal tag: field number 0');
  switch (wireType) {
    case VARINT:
      // Unlike a value read, a skipped varint may run longer than 10 bytes, as long as it ends.
      do {
        if (pos >= end) outOfRange();
      } while (buf[pos++]! & 0x80);
      return;
    case I64:
      return skipBytes(8, end);
    case LEN:
      pos = readEnd(end);
      return;
    case GROUP_START:
      for (;;) {
        if (pos >= end) outOfRange();
        const tag = readTag(end);
        const nested = tag >>> 3;
        if (nested === 0) fail('illegal tag: field number 0');
        if ((tag & 7) === GROUP_END) {
          if (nested !== field) fail('invalid end group tag');
          return;
        }
        skipField(tag & 7, nested, end, depth + 1);
      }
    case I32:
      return skipBytes(4, end);
    default:
      fail(`invalid wire type ${wireType} at offset ${pos}`);
  }
}

/** What an `AnyValue` holds so far: its oneof's last field, which decides how the next field merges. */
const NONE = 0;
const SCALAR = 1;
const ARRAY = 2;
const KVLIST = 3;

/** An array or key-value list nested deeper than MAX_VALUE_DEPTH: it makes its attribute list unusable. */
const TOO_DEEP = Symbol('too deep');
type Decoded = JsonValue | typeof TOO_DEEP;

/** The kind of the value the last {@link readAnyValue} returned. */
let anyValueKind = NONE;

/**
 * An `AnyValue` at message `depth`, nested `valueDepth` arrays and lists deep (1 for an attribute's value),
 * continuing `value` of `kind` when the value field is sent again. Arrays and key-value lists nested too deep
 * are read for their validity only.
 */
function readAnyValue(end: number, depth: number, valueDepth: number, kind: number, value: Decoded): Decoded {
  if (depth > RECURSION_LIMIT) fail('max depth exceeded');
  while (pos < end) {
    const tag = readTag(end);
    switch (tag) {
      case 0x0a: // string_value
        value = readString(end);
        kind = SCALAR;
        continue;
      case 0x10: // bool_value
        value = readBool(end);
        kind = SCALAR;
        continue;
      case 0x18: // int_value
        value = readIntValue(end);
        kind = SCALAR;
        continue;
      case 0x21: // double_value
        value = readDoubleValue(end);
        kind = SCALAR;
        continue;
      case 0x2a: {
        // array_value
        const stop = readEnd(end);
        if (kind !== ARRAY) value = valueDepth >= MAX_VALUE_DEPTH ? TOO_DEEP : (built(), []);
        kind = ARRAY;
        if (value === TOO_DEEP) skipValueList(stop, depth + 1, skipAnyValue);
        else if (readArrayInto(value as JsonValue[], stop, depth + 1, valueDepth + 1)) value = TOO_DEEP;
        continue;
      }
      case 0x32: {
        // kvlist_value
        const stop = readEnd(end);
        if (kind !== KVLIST) value = valueDepth >= MAX_VALUE_DEPTH ? TOO_DEEP : (built(), {});
        kind = KVLIST;
        if (value === TOO_DEEP) skipValueList(stop, depth + 1, skipKeyValue);
        else if (readKeyValueListInto(value as JsonObject, stop, depth + 1, valueDepth + 1)) value = TOO_DEEP;
        continue;
      }
      case 0x3a: {
        // bytes_value, as base64 like protobuf JSON
        const stop = readEnd(end);
        value = buf.base64Slice(pos, stop);
        pos = stop;
        kind = SCALAR;
        continue;
      }
      case 0x40: // string_value_strindex: a profiles dictionary index, no value in traces
        readVarint32(end);
        value = null;
        kind = SCALAR;
        continue;
    }
    otherField(tag, end, depth, ANY_VALUE);
  }
  anyValueKind = kind;
  return value;
}

/** An `ArrayValue`'s items appended to `array`; true when one nests too deep. */
function readArrayInto(array: JsonValue[], end: number, depth: number, itemDepth: number): boolean {
  if (depth > RECURSION_LIMIT) fail('max depth exceeded');
  let tooDeep = false;
  while (pos < end) {
    const tag = readTag(end);
    if (tag === 0x0a) {
      const stop = readEnd(end);
      const item = readAnyValue(stop, depth + 1, itemDepth, NONE, null);
      if (item === TOO_DEEP) tooDeep = true;
      else array.push(item);
      continue;
    }
    otherField(tag, end, depth, VALUE_LIST);
  }
  return tooDeep;
}

/** A `KeyValueList`'s entries set on `object`; true when a value nests too deep. */
function readKeyValueListInto(object: JsonObject, end: number, depth: number, valueDepth: number): boolean {
  if (depth > RECURSION_LIMIT) fail('max depth exceeded');
  let tooDeep = false;
  while (pos < end) {
    const tag = readTag(end);
    if (tag === 0x0a) {
      const stop = readEnd(end);
      if (readKeyValueInto(object, stop, depth + 1, valueDepth)) tooDeep = true;
      continue;
    }
    otherField(tag, end, depth, VALUE_LIST);
  }
  return tooDeep;
}

/** A `KeyValue` set on `target` (a later key replaces an earlier one); true, and nothing set, when its value nests too deep. */
function readKeyValueInto(target: JsonObject, end: number, depth: number, valueDepth: number): boolean {
  if (depth > RECURSION_LIMIT) fail('max depth exceeded');
  let key = '';
  let value: Decoded = null;
  let kind = NONE;
  while (pos < end) {
    const tag = readTag(end);
    if (tag === 0x0a) {
      key = readString(end);
    } else if (tag === 0x12) {
      const stop = readEnd(end);
      value = readAnyValue(stop, depth + 1, valueDepth, kind, value);
      kind = anyValueKind;
    } else if (tag === 0x18) {
      readVarint32(end); // key_strindex, for profiles
    } else {
      otherField(tag, end, depth, KEY_VALUE);
    }
  }
  if (value === TOO_DEEP) return true;
  setMember(target, key, value);
  return false;
}

/** An `AnyValue` read for its validity only (instrumentation scope and link attributes, values nested too deep). */
function skipAnyValue(end: number, depth: number): void {
  if (depth > RECURSION_LIMIT) fail('max depth exceeded');
  while (pos < end) {
    const tag = readTag(end);
    if (tag === 0x0a) skipString(end);
    else if (tag === 0x10 || tag === 0x18 || tag === 0x40) readVarint64(end);
    else if (tag === 0x21) skipBytes(8, end);
    else if (tag === 0x2a) skipValueList(readEnd(end), depth + 1, skipAnyValue);
    else if (tag === 0x32) skipValueList(readEnd(end), depth + 1, skipKeyValue);
    else if (tag === 0x3a) pos = readEnd(end);
    else otherField(tag, end, depth, ANY_VALUE);
  }
}

function skipKeyValue(end: number, depth: number): void {
  if (depth > RECURSION_LIMIT) fail('max depth exceeded');
  while (pos < end) {
    const tag = readTag(end);
    if (tag === 0x0a) skipString(end);
    else if (tag === 0x12) skipAnyValue(readEnd(end), depth + 1);
    else if (tag === 0x18) readVarint32(end);
    else otherField(tag, end, depth, KEY_VALUE);
  }
}

/** An `ArrayValue` or `KeyValueList` (field 1 repeated) read for its validity only. */
function skipValueList(end: number, depth: number, skipItem: (end: number, depth: number) => void): void {
  if (depth > RECURSION_LIMIT) fail('max depth exceeded');
  while (pos < end) {
    const tag = readTag(end);
    if (tag === 0x0a) skipItem(readEnd(end), depth + 1);
    else otherField(tag, end, depth, VALUE_LIST);
  }
}

/** A list of attributes being read: the span's, an event's or the resource's. */
interface Attributes {
  object: JsonObject;
  tooDeep: boolean;
}

function readAttribute(attributes: Attributes, end: number, depth: number): void {
  if (readKeyValueInto(attributes.object, readEnd(end), depth, 1)) attributes.tooDeep = true;
}

/** The attributes as the model holds them: none when one nests too deep (the span then carries the problem). */
const usable = (attributes: Attributes): JsonObject => (attributes.tooDeep ? {} : attributes.object);

function readEvent(end: number): { event: OtlpEvent; tooDeep: boolean } {
  let name = '';
  let timeUnixMicros = 0;
  const attributes: Attributes = { object: {}, tooDeep: false };
  while (pos < end) {
    const tag = readTag(end);
    if (tag === 0x09) timeUnixMicros = readMicros(end);
    else if (tag === 0x12) name = readString(end);
    else if (tag === 0x1a) readAttribute(attributes, end, 5);
    else if (tag === 0x20) readVarint32(end); // dropped_attributes_count
    else otherField(tag, end, 4, EVENT);
  }
  return { event: { name, timeUnixMicros, attributes: usable(attributes) }, tooDeep: attributes.tooDeep };
}

/** A link is not stored: read for its validity only. */
function skipLink(end: number): void {
  while (pos < end) {
    const tag = readTag(end);
    if (tag === 0x0a || tag === 0x12) pos = readEnd(end); // trace_id, span_id
    else if (tag === 0x1a) skipString(end); // trace_state
    else if (tag === 0x22) skipKeyValue(readEnd(end), 5);
    else if (tag === 0x28) readVarint32(end); // dropped_attributes_count
    else if (tag === 0x35) skipBytes(4, end); // flags
    else otherField(tag, end, 4, LINK);
  }
}

function readSpan(end: number): OtlpSpan {
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
  while (pos < end) {
    const tag = readTag(end);
    switch (tag) {
      case 0x0a:
        traceId = readRepeatedHex(end);
        continue;
      case 0x12:
        spanId = readHex(end);
        continue;
      case 0x1a:
        traceState = readString(end);
        continue;
      case 0x22:
        parentSpanId = readRepeatedHex(end);
        continue;
      case 0x2a:
        name = readString(end);
        continue;
      case 0x30:
        kind = readVarint32(end) | 0;
        continue;
      case 0x39:
        startTimeUnixMicros = readMicros(end);
        continue;
      case 0x41:
        endTimeUnixMicros = readMicros(end);
        continue;
      case 0x4a:
        readAttribute(attributes, end, 4);
        continue;
      case 0x5a: {
        built();
        const read = readEvent(readEnd(end));
        events.push(read.event);
        if (read.tooDeep) eventTooDeep = true;
        continue;
      }
      case 0x50: // dropped_attributes_count
      case 0x60: // dropped_events_count
      case 0x70: // dropped_links_count
        readVarint32(end);
        continue;
      case 0x6a:
        skipLink(readEnd(end));
        continue;
      case 0x7a: {
        // status; sent twice, it merges: the last code and message win
        const stop = readEnd(end);
        while (pos < stop) {
          const statusTag = readTag(stop);
          if (statusTag === 0x12) statusMessage = readString(stop);
          else if (statusTag === 0x18) statusCode = readVarint32(stop) | 0;
          else otherField(statusTag, stop, 4, STATUS);
        }
        continue;
      }
      case 0x85: // flags (field 16, fixed32)
        skipBytes(4, end);
        continue;
    }
    otherField(tag, end, 3, SPAN);
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

function readScopeSpans(end: number): OtlpScopeSpans {
  let scopeName = '';
  let scopeVersion = '';
  const spans: OtlpSpan[] = [];
  while (pos < end) {
    const tag = readTag(end);
    if (tag === 0x12) {
      built();
      spans.push(readSpan(readEnd(end)));
    } else if (tag === 0x0a) {
      // scope; sent twice, it merges
      const stop = readEnd(end);
      while (pos < stop) {
        const scopeTag = readTag(stop);
        if (scopeTag === 0x0a) scopeName = readString(stop);
        else if (scopeTag === 0x12) scopeVersion = readString(stop);
        else if (scopeTag === 0x1a) skipKeyValue(readEnd(stop), 4);
        else if (scopeTag === 0x20) readVarint32(stop); // dropped_attributes_count
        else otherField(scopeTag, stop, 3, SCOPE);
      }
    } else if (tag === 0x1a) {
      skipString(end); // schema_url
    } else {
      otherField(tag, end, 2, SCOPE_SPANS);
    }
  }
  return { scopeName, scopeVersion, spans };
}

function readResourceSpans(end: number): OtlpResourceSpans {
  const attributes: Attributes = { object: {}, tooDeep: false };
  const scopeSpans: OtlpScopeSpans[] = [];
  while (pos < end) {
    const tag = readTag(end);
    if (tag === 0x12) {
      scopeSpans.push(readScopeSpans(readEnd(end)));
    } else if (tag === 0x0a) {
      // resource; sent twice, it merges: the attribute lists concatenate
      const stop = readEnd(end);
      while (pos < stop) {
        const resourceTag = readTag(stop);
        if (resourceTag === 0x0a) readAttribute(attributes, stop, 3);
        else if (resourceTag === 0x10) readVarint32(stop); // dropped_attributes_count
        else if (resourceTag === 0x1a) skipEntityRef(readEnd(stop), 3);
        else otherField(resourceTag, stop, 2, RESOURCE);
      }
    } else if (tag === 0x1a) {
      skipString(end); // schema_url
    } else {
      otherField(tag, end, 1, RESOURCE_SPANS);
    }
  }
  return { resourceAttributes: usable(attributes), scopeSpans };
}

/** An `EntityRef` (fields 1 to 4, all strings) read for its validity only. */
function skipEntityRef(end: number, depth: number): void {
  while (pos < end) {
    const tag = readTag(end);
    if (tag === 0x0a || tag === 0x12 || tag === 0x1a || tag === 0x22) skipString(end);
    else otherField(tag, end, depth, ENTITY_REF);
  }
}

/**
 * Decodes an OTLP/HTTP binary protobuf body (`ExportTraceServiceRequest`). Unknown fields are skipped as
 * protobuf requires; truncated data, wrong wire types, invalid UTF-8 and nesting past the recursion limit
 * throw {@link UndecodableRequestError}.
 */
export function decodeExportRequest(bytes: Uint8Array): OtlpExport {
  containerBudget = MAX_JSON_CONTAINERS - bracketsUpTo(bytes, MAX_JSON_CONTAINERS);
  if (containerBudget < 0) tooManyContainers();
  buf = (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)) as Buffer & NativeSlices;
  pos = 0;
  try {
    const end = buf.length;
    const resourceSpans: OtlpResourceSpans[] = [];
    while (pos < end) {
      const tag = readTag(end);
      if (tag === 0x0a) resourceSpans.push(readResourceSpans(readEnd(end)));
      else otherField(tag, end, 0, REQUEST);
    }
    // Strings are strict UTF-8 (invalid bytes throw), so none holds a lone surrogate.
    return { wellFormedText: true, resourceSpans };
  } finally {
    buf = NO_BYTES; // not kept alive until the next request
  }
}

// The responses are encoded with the code protobufjs generates from the same protos. 64-bit fields take
// Long values; the runtime looks for `long` with a dynamic require that a bundled ES module cannot satisfy.
$protobuf.util.Long = Long;
$protobuf.configure();

const proto = opentelemetry.proto;

/** The binary `ExportTraceServiceResponse`; `partial_success` only when spans were rejected. */
export function encodeExportResponse(rejectedSpans: number, errorMessage: string): Uint8Array {
  const partialSuccess = rejectedSpans > 0 || errorMessage !== '' ? { rejectedSpans: Long.fromNumber(rejectedSpans), errorMessage } : null;
  return proto.collector.trace.v1.ExportTraceServiceResponse.encode({ partialSuccess }).finish();
}

/** The binary `google.rpc.Status` an OTLP/HTTP error response carries. */
export function encodeStatus(code: number, message: string): Uint8Array {
  return google.rpc.Status.encode({ code, message, details: [] }).finish();
}
