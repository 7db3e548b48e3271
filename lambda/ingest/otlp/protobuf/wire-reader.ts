import { isUtf8 } from 'node:buffer';
import { UndecodableRequestError } from './undecodable-request-error.js';

/*
 * The protobuf wire format (https://protobuf.dev/programming-guides/encoding/) as the OTLP decoder reads it, with
 * the rules of protobufjs where protobuf leaves a choice:
 * - a varint value may take 10 bytes, a tag 5 (the 5th below 16), a length 5 (the 5th below 8, so under 2^31);
 * - unknown fields of every wire type are skipped, groups included (their end tag must match; field 0 never);
 * - a group's fields count one message deeper, against the same recursion limit as messages.
 */

/** protobufjs's recursion limit, protoc's default (CodedInputStream::default_recursion_limit_). */
export const RECURSION_LIMIT = 100;

export const VARINT = 0;
export const I64 = 1;
export const LEN = 2;
const GROUP_START = 3;
const GROUP_END = 4;
export const I32 = 5;

/** The wire type each known field of a message must have, by field number. */
export type KnownFields = readonly (number | undefined)[];

export function knownFields(fields: Record<number, number>): KnownFields {
  const known: (number | undefined)[] = [];
  for (const [field, wireType] of Object.entries(fields)) known[Number(field)] = wireType;
  return known;
}

const TWO_TO_32 = 4294967296;

/**
 * Short strings and ids by their bytes: an export repeats its attribute keys, span names, models and trace ids
 * span after span; hashing and comparing a few bytes costs less than decoding them again, and the one string per
 * key then indexes the mapping's objects without being hashed again. Direct-mapped and bounded (a slot keeps the
 * last bytes hashed to it); bytes are compared in full, so a hit is always exact.
 */
export const MAX_CACHED_BYTES = 48;
const MAX_CACHE_SLOTS = 1024;
const MIN_CACHE_SLOTS = 16;
// Hex and UTF-8 texts of the same bytes differ: the kind is hashed in and kept with the length.
export const CACHED_UTF8 = 0;
export const CACHED_HEX = 1 << 16;

/** Cache slots for a body: about one per 64 bytes, a power of two, so a small body allocates little. */
export function cacheSlotsFor(length: number): number {
  return Math.min(MAX_CACHE_SLOTS, Math.max(MIN_CACHE_SLOTS, 1 << (32 - Math.clz32(length >>> 6))));
}

/**
 * The cache slot of bytes `[start, stop)` of `bytes` read as `kind`, `mask` being the slot count less one: FNV-1a
 * of the length and five of the bytes, ends and middle, for speed (a collision only costs a miss). Exported so
 * that tests can build strings that meet in a slot on purpose; small enough for V8 to inline into its caller.
 */
export function cacheSlot(bytes: Uint8Array, start: number, stop: number, kind: number, mask: number): number {
  const length = stop - start;
  const last = stop - 1;
  const quarter = length >> 2;
  let hash = Math.imul(0x811c9dc5 ^ (length | kind), 0x01000193);
  hash = Math.imul(hash ^ bytes[start]!, 0x01000193);
  hash = Math.imul(hash ^ bytes[last]!, 0x01000193);
  hash = Math.imul(hash ^ bytes[start + (length >> 1)]!, 0x01000193);
  hash = Math.imul(hash ^ bytes[start + quarter]!, 0x01000193);
  hash = Math.imul(hash ^ bytes[last - quarter]!, 0x01000193);
  return (hash ^ (hash >>> 16)) & mask;
}

/**
 * A cursor over one protobuf body: its bytes, the read position and what the reads leave behind. Each decode
 * makes its own, so two decodes never share a position or a cache. Every read takes the end of the message
 * being read and refuses to pass it; a failure throws {@link UndecodableRequestError}.
 */
export class WireReader {
  /** The read position. */
  pos = 0;
  /** The high 32 bits of the last {@link readVarint64}. */
  high32 = 0;
  readonly buf: Buffer;
  private readonly cacheMask: number;
  private readonly cachedBytes: Uint8Array;
  private readonly cachedLengths: Int32Array;
  private readonly cachedTexts: string[];

  constructor(bytes: Uint8Array) {
    this.buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const slots = cacheSlotsFor(bytes.length);
    this.cacheMask = slots - 1;
    this.cachedBytes = new Uint8Array(slots * MAX_CACHED_BYTES);
    this.cachedLengths = new Int32Array(slots).fill(-1);
    this.cachedTexts = new Array<string>(slots).fill('');
  }

  /** Refuses the body as what this reader serves: not an `ExportTraceServiceRequest`, for `reason`. */
  fail(reason: string): never {
    throw new UndecodableRequestError(`not a valid protobuf ExportTraceServiceRequest (${reason})`);
  }

  outOfRange(): never {
    this.fail(`index out of range at offset ${this.pos}`);
  }

  /** A field's tag, `pos` being before `end`: at most 5 bytes. */
  readTag(end: number): number {
    const buf = this.buf;
    const first = buf[this.pos]!;
    if (first < 0x80) {
      this.pos++;
      return first;
    }
    let value = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      if (this.pos >= end) this.outOfRange();
      const byte = buf[this.pos++]!;
      value |= (byte & 0x7f) << shift;
      if (byte < 0x80) return value >>> 0;
    }
    if (this.pos >= end) this.outOfRange();
    const last = buf[this.pos++]!;
    if (last > 0x0f) this.fail('invalid tag encoding');
    return (value | (last << 28)) >>> 0;
  }

  /** A length prefix, at most 5 bytes and below 2^31, and the end of the bytes it counts, which must fit in `end`. */
  readEnd(end: number): number {
    const buf = this.buf;
    if (this.pos >= end) this.outOfRange();
    let byte = buf[this.pos++]!;
    let length = byte;
    if (byte >= 0x80) {
      length &= 0x7f;
      let shift = 7;
      for (; shift < 28; shift += 7) {
        if (this.pos >= end) this.outOfRange();
        byte = buf[this.pos++]!;
        length |= (byte & 0x7f) << shift;
        if (byte < 0x80) break;
      }
      if (shift === 28) {
        if (this.pos >= end) this.outOfRange();
        byte = buf[this.pos++]!;
        if (byte > 7) this.fail('invalid length encoding');
        length = (length | (byte << 28)) >>> 0;
      }
    }
    const stop = this.pos + length;
    if (stop > end) this.outOfRange();
    return stop;
  }

  /** A varint value's low 32 bits (an `int32`, `uint32` or enum), the varint taking at most 10 bytes. */
  readVarint32(end: number): number {
    const buf = this.buf;
    if (this.pos >= end) this.outOfRange();
    let byte = buf[this.pos++]!;
    if (byte < 0x80) return byte;
    let value = byte & 0x7f;
    for (let shift = 7; shift < 70; shift += 7) {
      if (this.pos >= end) this.outOfRange();
      byte = buf[this.pos++]!;
      // Past the fifth byte the bits are beyond 32; a shift of 28 keeps the low 4 bits of the fifth.
      if (shift < 32) value |= (byte & 0x7f) << shift;
      if (byte < 0x80) return value >>> 0;
    }
    this.fail('invalid varint encoding');
  }

  /** A varint of at most 10 bytes: returns its low 32 bits, leaves the high 32 in {@link high32}. */
  readVarint64(end: number): number {
    const buf = this.buf;
    this.high32 = 0;
    if (this.pos >= end) this.outOfRange();
    let byte = buf[this.pos++]!;
    if (byte < 0x80) return byte;
    let low = byte & 0x7f;
    for (let shift = 7; shift < 28; shift += 7) {
      if (this.pos >= end) this.outOfRange();
      byte = buf[this.pos++]!;
      low |= (byte & 0x7f) << shift;
      if (byte < 0x80) return low >>> 0;
    }
    if (this.pos >= end) this.outOfRange();
    byte = buf[this.pos++]!;
    low = (low | ((byte & 0x7f) << 28)) >>> 0;
    let high = (byte & 0x7f) >> 4;
    if (byte < 0x80) {
      this.high32 = high;
      return low;
    }
    for (let shift = 3; shift < 38; shift += 7) {
      if (this.pos >= end) this.outOfRange();
      byte = buf[this.pos++]!;
      high |= (byte & 0x7f) << shift;
      if (byte < 0x80) {
        this.high32 = high >>> 0;
        return low;
      }
    }
    this.fail('invalid varint encoding');
  }

  readBool(end: number): boolean {
    let value = false;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= end) this.outOfRange();
      const byte = this.buf[this.pos++]!;
      if (byte & 0x7f) value = true;
      if (byte < 0x80) return value;
    }
    this.fail('invalid varint encoding');
  }

  skipBytes(count: number, end: number): void {
    if (this.pos + count > end) this.outOfRange();
    this.pos += count;
  }

  /**
   * A fixed64 of nanoseconds in whole microseconds. The quotient is split at the high word so that each part
   * is exact; their sum is then exact below 2^53 µs and otherwise rounded once, as `Number(nanos / 1000n)` is.
   */
  readMicros(end: number): number {
    const buf = this.buf;
    const pos = this.pos;
    if (pos + 8 > end) this.outOfRange();
    const low = (buf[pos]! | (buf[pos + 1]! << 8) | (buf[pos + 2]! << 16) | (buf[pos + 3]! << 24)) >>> 0;
    const high = (buf[pos + 4]! | (buf[pos + 5]! << 8) | (buf[pos + 6]! << 16) | (buf[pos + 7]! << 24)) >>> 0;
    this.pos = pos + 8;
    if (high === 0) return Math.floor(low / 1000);
    const highRest = high % 1000;
    return ((high - highRest) / 1000) * TWO_TO_32 + Math.floor((highRest * TWO_TO_32 + low) / 1000);
  }

  /** An int64 as JSON holds it: a number when it is a safe integer, else its decimal string (exact). */
  readInt64Value(end: number): number | string {
    const low = this.readVarint64(end);
    const high = this.high32;
    const value = (high | 0) * TWO_TO_32 + low;
    return Number.isSafeInteger(value) ? value : BigInt.asIntN(64, (BigInt(high) << 32n) | BigInt(low)).toString();
  }

  /** A double as JSON holds it; JSON has no NaN or infinities, so those are their names. */
  readDoubleValue(end: number): number | string {
    if (this.pos + 8 > end) this.outOfRange();
    const value = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return Number.isFinite(value) ? value : String(value);
  }

  /** A string field. */
  readString(end: number): string {
    const stop = this.readEnd(end);
    const start = this.pos;
    this.pos = stop;
    if (start === stop) return '';
    return stop - start <= MAX_CACHED_BYTES ? this.cachedText(start, stop, CACHED_UTF8) : this.utf8At(start, stop);
  }

  /** A string field read for its validity only. */
  skipString(end: number): void {
    const stop = this.readEnd(end);
    const start = this.pos;
    this.pos = stop;
    if (start !== stop && !isUtf8(this.buf.subarray(start, stop))) this.fail(`invalid UTF-8 in the string at offset ${start}`);
  }

  /** A bytes field as lower-case hex, for ids that repeat from span to span (trace and parent span ids). */
  readRepeatedHex(end: number): string {
    const stop = this.readEnd(end);
    const start = this.pos;
    this.pos = stop;
    if (start === stop) return '';
    return stop - start <= MAX_CACHED_BYTES ? this.cachedText(start, stop, CACHED_HEX) : this.buf.toString('hex', start, stop);
  }

  /** A bytes field as lower-case hex, for ids that do not repeat (span ids). */
  readHex(end: number): string {
    const stop = this.readEnd(end);
    const start = this.pos;
    this.pos = stop;
    return start === stop ? '' : this.buf.toString('hex', start, stop);
  }

  /** A bytes field as base64, as protobuf JSON writes bytes. */
  readBase64(end: number): string {
    const stop = this.readEnd(end);
    const start = this.pos;
    this.pos = stop;
    return start === stop ? '' : this.buf.toString('base64', start, stop);
  }

  /**
   * The text of `[start, stop)`, which protobuf requires to be UTF-8. Decoding turns every invalid sequence into
   * U+FFFD (as the WHATWG decoder does; the tests hold it to a fatal TextDecoder), so only a text holding one
   * needs the strict check, which costs a view and a native call.
   */
  private utf8At(start: number, stop: number): string {
    const text = this.buf.toString('utf8', start, stop);
    if (text.includes('\uFFFD') && !isUtf8(this.buf.subarray(start, stop))) this.fail(`invalid UTF-8 in the string at offset ${start}`);
    return text;
  }

  private cachedText(start: number, stop: number, kind: number): string {
    const buf = this.buf;
    const length = stop - start;
    const slot = cacheSlot(buf, start, stop, kind, this.cacheMask);
    const at = slot * MAX_CACHED_BYTES;
    const cachedBytes = this.cachedBytes;
    if (this.cachedLengths[slot] === (length | kind)) {
      let i = 0;
      while (i < length && cachedBytes[at + i] === buf[start + i]) i++;
      if (i === length) return this.cachedTexts[slot]!;
    }
    const text = kind === CACHED_HEX ? buf.toString('hex', start, stop) : this.utf8At(start, stop);
    for (let i = 0; i < length; i++) cachedBytes[at + i] = buf[start + i]!;
    this.cachedLengths[slot] = length | kind;
    this.cachedTexts[slot] = text;
    return text;
  }

  /** A field the message's decoder did not take: a known one has the wrong wire type; an unknown one is skipped. */
  otherField(tag: number, end: number, depth: number, known: KnownFields): void {
    const field = tag >>> 3;
    const expected = known[field];
    if (expected !== undefined) this.fail(`field ${field} has wire type ${tag & 7}, expected ${expected}`);
    this.skipField(tag & 7, field, end, depth);
  }

  private skipField(wireType: number, field: number, end: number, depth: number): void {
    if (depth > RECURSION_LIMIT) this.fail('max depth exceeded');
    if (field === 0) this.fail('illegal tag: field number 0');
    switch (wireType) {
      case VARINT:
        // Unlike a value read, a skipped varint may run longer than 10 bytes, as long as it ends.
        do {
          if (this.pos >= end) this.outOfRange();
        } while (this.buf[this.pos++]! & 0x80);
        return;
      case I64:
        return this.skipBytes(8, end);
      case LEN:
        this.pos = this.readEnd(end);
        return;
      case GROUP_START:
        for (;;) {
          if (this.pos >= end) this.outOfRange();
          const tag = this.readTag(end);
          const nested = tag >>> 3;
          if (nested === 0) this.fail('illegal tag: field number 0');
          if ((tag & 7) === GROUP_END) {
            if (nested !== field) this.fail('invalid end group tag');
            return;
          }
          this.skipField(tag & 7, nested, end, depth + 1);
        }
      case I32:
        return this.skipBytes(4, end);
      default:
        this.fail(`invalid wire type ${wireType} at offset ${this.pos}`);
    }
  }
}
