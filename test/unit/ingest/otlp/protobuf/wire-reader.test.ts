import { decodeExportRequest } from '../../../../../lambda/ingest/otlp/protobuf/decode-export-request.js';
import { CACHED_HEX, CACHED_UTF8, cacheSlot, cacheSlotsFor, MAX_CACHED_BYTES, WireReader } from '../../../../../lambda/ingest/otlp/protobuf/wire-reader.js';
import { len, otlp, varint, varintField } from '../../../../support/protobuf-bytes.js';

describe('WireReader', () => {
  it('keeps each body its own read position and 64-bit high word when two are read interleaved', () => {
    // The same layout in both: a short string (cached), an id (hex, cached), a 64-bit varint, a long string.
    const body = (name: string, id: Buffer, count: bigint, text: string) => Buffer.concat([len(1, name), len(2, id), varintField(3, count), len(4, text)]);
    const first = body('alpha', Buffer.from('0af7651916cd43dd', 'hex'), 2n ** 40n + 5n, 'ünïcode '.repeat(10));
    const second = body('beta, a longer name', Buffer.from('b7ad6b7169203331', 'hex'), 7n, 'plain '.repeat(20));
    const a = new WireReader(first);
    const b = new WireReader(second);
    const steps: unknown[] = [];
    for (const [reader, end] of [[a, first.length], [b, second.length]] as const) steps.push(reader.readTag(end));
    for (const [reader, end] of [[a, first.length], [b, second.length]] as const) steps.push(reader.readString(end));
    for (const [reader, end] of [[a, first.length], [b, second.length]] as const) steps.push(reader.readTag(end), reader.readRepeatedHex(end));
    for (const [reader, end] of [[a, first.length], [b, second.length]] as const) steps.push(reader.readTag(end), reader.readVarint64(end));
    steps.push(a.high32, b.high32);
    for (const [reader, end] of [[a, first.length], [b, second.length]] as const) steps.push(reader.readTag(end), reader.readString(end));
    steps.push(a.pos === first.length, b.pos === second.length);
    expect(steps).toEqual([
      0x0a, 0x0a,
      'alpha', 'beta, a longer name',
      0x12, '0af7651916cd43dd', 0x12, 'b7ad6b7169203331',
      0x18, 5, 0x18, 7,
      256, 0,
      0x22, 'ünïcode '.repeat(10), 0x22, 'plain '.repeat(20),
      true, true,
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Each read at the edges of its encoding: the value and the position it leaves, or the exact refusal (the 400's
// message names the offset, so a client can find the bad byte).

const reader = (bytes: number[] | Buffer) => new WireReader(Buffer.from(bytes));
const refused = (reason: string) => `not a valid protobuf ExportTraceServiceRequest (${reason})`;
const outOfRange = (offset: number) => refused(`index out of range at offset ${offset}`);

/** What `read` returns and where it leaves the reader, or the message it throws. */
function outcome<T>(r: WireReader, read: (r: WireReader) => T): { value: T; pos: number } | { error: string } {
  try {
    const value = read(r);
    return { value, pos: r.pos };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

describe('WireReader.readTag', () => {
  it.each([
    ['one byte', [0x08], 0x08, 1],
    ['two bytes, the first 0x80 (field 16, varint)', [0x80, 0x01], 128, 2],
    ['two bytes', [0xff, 0x7f], 0x3fff, 2],
    ['four bytes', [0x80, 0x80, 0x80, 0x01], 2 ** 21, 4],
    ['five bytes', [0x80, 0x80, 0x80, 0x80, 0x01], 2 ** 28, 5],
    ['five bytes, the largest', [0xff, 0xff, 0xff, 0xff, 0x0f], 2 ** 32 - 1, 5],
    ['five bytes, overlong', [0x81, 0x80, 0x80, 0x80, 0x00], 1, 5],
  ])('%s', (_, bytes, value, pos) => {
    expect(outcome(reader([...bytes, 0x7f]), (r) => r.readTag(bytes.length))).toEqual({ value, pos });
  });

  it.each([
    ['a fifth byte of 16', [0xff, 0xff, 0xff, 0xff, 0x10], 5, refused('invalid tag encoding')],
    ['cut short after one byte', [0x88], 1, outOfRange(1)],
    ['cut short by its message, the body going on', [0x88, 0x01], 1, outOfRange(1)],
    ['cut short after four bytes', [0x80, 0x80, 0x80, 0x80], 4, outOfRange(4)],
    ['cut short by its message after four bytes, the body going on', [0x80, 0x80, 0x80, 0x80, 0x01], 4, outOfRange(4)],
  ])('refuses %s', (_, bytes, end, error) => {
    expect(outcome(reader(bytes), (r) => r.readTag(end))).toEqual({ error });
  });
});

describe('WireReader.readEnd', () => {
  const payload = (length: number) => Array.from({ length }, (_, i) => i & 0x7f);

  it.each([
    ['an empty field', [0x00], 1, 1],
    ['a length ending exactly at the message end', [0x02, ...payload(2)], 3, 1],
    ['a two-byte length', [0x80, 0x01, ...payload(128)], 130, 2],
    ['an overlong four-byte length', [0x81, 0x80, 0x80, 0x00, ...payload(1)], 5, 4],
    ['an overlong five-byte length', [0x81, 0x80, 0x80, 0x80, 0x00, ...payload(1)], 6, 5],
  ])('%s: the end of its bytes, the position after the length', (_, bytes, stop, pos) => {
    expect(outcome(reader([...bytes, 0x01, 0x01]), (r) => r.readEnd(bytes.length))).toEqual({ value: stop, pos });
  });

  it.each([
    ['no length at all', [], 0, outOfRange(0)],
    ['a length one past its message', [0x03, 0x61, 0x62], 3, outOfRange(1)],
    ['a length past its message, the body going on', [0x03, 0x61, 0x62, 0x63], 3, outOfRange(1)],
    ['a length cut short', [0x80], 1, outOfRange(1)],
    ['a length cut short by its message, the body going on', [0x80, 0x01, 0x00], 1, outOfRange(1)],
    ['a length cut short after four bytes', [0x80, 0x80, 0x80, 0x80], 4, outOfRange(4)],
    ['a length of 7 × 2^28 in five bytes, past the end', [0x80, 0x80, 0x80, 0x80, 0x07], 5, outOfRange(5)],
    ['a length of 2^31 - 1, past the end', [0xff, 0xff, 0xff, 0xff, 0x07], 5, outOfRange(5)],
    ['a fifth length byte of 8 (2^31)', [0x80, 0x80, 0x80, 0x80, 0x08], 5, refused('invalid length encoding')],
    ['a fifth length byte of 16', [0x80, 0x80, 0x80, 0x80, 0x10], 5, refused('invalid length encoding')],
  ])('refuses %s', (_, bytes, end, error) => {
    expect(outcome(reader(bytes), (r) => r.readEnd(end))).toEqual({ error });
  });
});

/** Varints of `value` padded to `bytes` bytes (overlong, as protobuf allows up to 10). */
function paddedVarint(value: bigint, bytes: number): Buffer {
  const plain = varint(value);
  if (plain.length >= bytes) return plain;
  const padded = Buffer.alloc(bytes, 0x80);
  plain.copy(padded);
  padded[plain.length - 1]! |= 0x80;
  padded[bytes - 1] = 0x00;
  return padded;
}

describe('WireReader.readVarint32 and readVarint64', () => {
  /** 64-bit values of every varint length, the edges of each 7-bit group and of 32 and 64 bits. */
  const values: bigint[] = [0n, 1n, 127n, 128n, 300n, 2n ** 31n - 1n, 2n ** 31n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 32n + 5n, 2n ** 35n + 5n, 2n ** 53n + 1n, 2n ** 63n, 2n ** 64n - 1n];
  for (let bits = 7n; bits < 64n; bits += 7n) values.push(2n ** bits - 1n, 2n ** bits, 2n ** bits + 2n ** (bits - 1n) + 3n);
  let state = 0x2545f4914f6cdd1dn;
  for (let i = 0; i < 200; i++) {
    state = (state * 6364136223846793005n + 1442695040888963407n) % 2n ** 64n;
    values.push(state >> BigInt(i % 64));
  }

  it('read every value as its low 32 bits, and its high 32 bits beside, at every length up to 10 bytes', () => {
    const wrong: string[] = [];
    for (const value of values) {
      for (let length = varint(value).length; length <= 10; length++) {
        const bytes = Buffer.concat([paddedVarint(value, length), Buffer.from([0x05])]);
        const low = Number(value & 0xffffffffn);
        const high = Number(value >> 32n);
        const r32 = reader(bytes);
        const r64 = reader(bytes);
        const got = [r32.readVarint32(bytes.length), r32.pos, r64.readVarint64(bytes.length), r64.high32, r64.pos];
        if (JSON.stringify(got) !== JSON.stringify([low, length, low, high, length])) wrong.push(`${value} in ${length} bytes: ${JSON.stringify(got)}`);
      }
    }
    expect(wrong.slice(0, 5)).toEqual([]);
  });

  it('clear the high word of a short varint read after a long one', () => {
    const r = reader(Buffer.concat([varint(2n ** 64n - 1n), varint(5n), varint(2n ** 40n), varint(2n ** 20n)]));
    expect([r.readVarint64(30), r.high32, r.readVarint64(30), r.high32, r.readVarint64(30), r.high32, r.readVarint64(30), r.high32]).toEqual([2 ** 32 - 1, 2 ** 32 - 1, 5, 0, 0, 2 ** 8, 2 ** 20, 0]);
  });

  it.each([
    ['11 bytes', [...Buffer.alloc(10, 0x80), 0x01], 11, refused('invalid varint encoding')],
    ['11 bytes of ones', [...Buffer.alloc(10, 0xff), 0x01], 11, refused('invalid varint encoding')],
    ['nothing to read', [], 0, outOfRange(0)],
    ['cut short after one byte', [0x80], 1, outOfRange(1)],
    ['cut short by its message, the body going on', [0x80, 0x01], 1, outOfRange(1)],
    ['cut short after four bytes', [0x80, 0x80, 0x80, 0x80], 4, outOfRange(4)],
    ['cut short after five bytes', [0x80, 0x80, 0x80, 0x80, 0x80], 5, outOfRange(5)],
    ['cut short after nine bytes', [...Buffer.alloc(9, 0x80)], 9, outOfRange(9)],
    ['cut short by its message after nine bytes, the body going on', [...Buffer.alloc(9, 0x80), 0x01], 9, outOfRange(9)],
  ])('refuse %s', (_, bytes, end, error) => {
    expect(outcome(reader(bytes), (r) => r.readVarint32(end))).toEqual({ error });
    expect(outcome(reader(bytes), (r) => r.readVarint64(end))).toEqual({ error });
  });
});

describe('WireReader.readBool', () => {
  it.each([
    [[0x00], false],
    [[0x01], true],
    [[0x02], true],
    [[0x80, 0x00], false],
    [[0x80, 0x01], true],
    [[0x81, 0x00], true],
    [[...Buffer.alloc(9, 0x80), 0x00], false],
    [[...Buffer.alloc(9, 0x80), 0x01], true],
  ])('reads %j as %s', (bytes, value) => {
    expect(outcome(reader([...bytes, 0x01]), (r) => r.readBool(bytes.length))).toEqual({ value, pos: bytes.length });
  });

  it.each([
    ['11 bytes', [...Buffer.alloc(10, 0x80), 0x01], 11, refused('invalid varint encoding')],
    ['cut short', [0x80], 1, outOfRange(1)],
    ['cut short by its message, the body going on', [0x80, 0x01], 1, outOfRange(1)],
    ['nothing to read', [], 0, outOfRange(0)],
  ])('refuses %s', (_, bytes, end, error) => {
    expect(outcome(reader(bytes), (r) => r.readBool(end))).toEqual({ error });
  });
});

describe('WireReader: fixed-width values', () => {
  it('reads them ending exactly at the message end, and refuses them one byte short, the body going on', () => {
    const bytes = Buffer.alloc(12, 0);
    bytes.writeDoubleLE(1.5, 0);
    expect(outcome(reader(bytes), (r) => r.readDoubleValue(8))).toEqual({ value: 1.5, pos: 8 });
    expect(outcome(reader(bytes), (r) => r.readDoubleValue(7))).toEqual({ error: outOfRange(0) });
    const micros = Buffer.alloc(12, 0);
    micros.writeBigUInt64LE(5_000_000n, 0);
    expect(outcome(reader(micros), (r) => r.readMicros(8))).toEqual({ value: 5_000, pos: 8 });
    expect(outcome(reader(micros), (r) => r.readMicros(7))).toEqual({ error: outOfRange(0) });
    expect(outcome(reader(bytes), (r) => (r.skipBytes(4, 4), r.skipBytes(4, 8)))).toEqual({ value: undefined, pos: 8 });
    expect(outcome(reader(bytes), (r) => (r.skipBytes(4, 4), r.skipBytes(4, 7)))).toEqual({ error: outOfRange(4) });
  });
});

describe('WireReader.readMicros', () => {
  it('reads 2,000 random fixed64 nanoseconds as Number(nanos / 1000n) does, at every magnitude', () => {
    const bytes = Buffer.alloc(8);
    const wrong: string[] = [];
    let state = 12345n;
    for (let i = 0; i < 2_000 && wrong.length < 5; i++) {
      state = (state * 6364136223846793005n + 1442695040888963407n) % 2n ** 64n;
      const nanos = state >> BigInt(i % 64);
      bytes.writeBigUInt64LE(nanos);
      const got = reader(bytes).readMicros(8);
      if (got !== Number(nanos / 1000n)) wrong.push(`${nanos}: ${got}`);
    }
    expect(wrong).toEqual([]);
  });
});

describe('WireReader: strings and bytes', () => {
  it('reads an empty field as an empty text in every form', () => {
    const r = reader([0x00, 0x00, 0x00, 0x00, 0x00]);
    expect([r.readString(5), r.readRepeatedHex(5), r.readHex(5), r.readBase64(5), r.pos]).toEqual(['', '', '', '', 4]);
  });

  it('reads NUL bytes as themselves in a fresh reader, whose cache starts empty', () => {
    expect(reader([0x01, 0x00]).readString(2)).toBe('\u0000');
    expect(reader([0x03, 0x00, 0x00, 0x00]).readString(4)).toBe('\u0000\u0000\u0000');
    expect(reader([0x04, 0x00, 0x00, 0x00, 0x00]).readRepeatedHex(5)).toBe('00000000');
  });

  it('reads a Uint8Array that is not a Buffer, at an offset into its memory', () => {
    const memory = new Uint8Array([0xff, 0xff, 0x02, 0xb7, 0xad, 0x02, 0x68, 0x69, 0x02, 0x00, 0xff, 0x02, 0xb7, 0xad, 0xff]);
    const r = new WireReader(memory.subarray(2, 14));
    expect([r.readHex(12), r.readString(12), r.readBase64(12), r.readRepeatedHex(12), r.pos]).toEqual(['b7ad', 'hi', 'AP8=', 'b7ad', 12]);
  });

  it('keeps each of many short strings and ids its own text, however often their bytes meet in the cache', () => {
    // Strings of NUL and "a", 1 to 50 bytes: many share a length and most bytes, and a small body has few cache
    // slots, whose bytes start as NULs; each is read as text and as hex, most more than once.
    let state = 99;
    const random = (n: number) => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return (state >>> 16) % n;
    };
    const wrong: string[] = [];
    for (let body = 0; body < 200 && wrong.length === 0; body++) {
      const texts = Array.from({ length: 4 + random(12) }, () => {
        const length = random(4) === 0 ? 44 + random(7) : 1 + random(4);
        return Array.from({ length }, () => '\u0000a'[random(2)]).join('');
      });
      const reads = Array.from({ length: 40 }, () => [texts[random(texts.length)]!, random(2) === 0] as const);
      const bytes = Buffer.concat(reads.map(([text]) => len(1, text)));
      const r = new WireReader(bytes);
      for (const [text, asHex] of reads) {
        r.readTag(bytes.length);
        const got = asHex ? r.readRepeatedHex(bytes.length) : r.readString(bytes.length);
        const expected = asHex ? Buffer.from(text).toString('hex') : text;
        if (got !== expected) wrong.push(`body ${body}: ${expected} read as ${got}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The string cache keeps one string per slot, keyed by its length and kind, its bytes compared in full. These
// tests make strings meet in a slot on purpose (cacheSlot is the cache's own slot function), so that a cache that
// stored, compared or bounded the wrong bytes would hand one string's text to another. Each string is read by
// the decoder as a span name (UTF-8) or a trace id (hex), each in its own span.

describe("WireReader's string cache, strings meeting in a slot on purpose", () => {
  /** Seeded, so every run builds the same strings. */
  function letters(seed: number) {
    let state = seed;
    return (count: number, alphabet = 'abcdefghijklmnopqrstuvwxyz'): Buffer => {
      const bytes = Buffer.alloc(count);
      for (let i = 0; i < count; i++) {
        state = (Math.imul(state, 1103515245) + 12345) >>> 0;
        bytes[i] = alphabet.charCodeAt((state >>> 16) % alphabet.length);
      }
      return bytes;
    };
  }

  const slotOf = (bytes: Buffer, kind: number, mask: number) => cacheSlot(bytes, 0, bytes.length, kind, mask);

  /** The first candidate that `fits`; a test that finds none fails here rather than passing without its collision. */
  function first(candidate: () => Buffer, fits: (bytes: Buffer) => boolean): Buffer {
    for (let tries = 0; tries < 100_000; tries++) {
      const bytes = candidate();
      if (fits(bytes)) return bytes;
    }
    throw new Error('no candidate fits');
  }

  const kinds = [
    ['span names (UTF-8)', CACHED_UTF8],
    ['trace ids (hex)', CACHED_HEX],
  ] as const;
  /** One span per string, holding it as its name or its trace id. */
  const body = (kind: number, strings: Buffer[]) => otlp.request(otlp.scopeSpans(...strings.map((bytes) => otlp.span(len(kind === CACHED_HEX ? 1 : 5, bytes)))));
  const texts = (kind: number, bytes: Buffer) => {
    const spans = decodeExportRequest(bytes).resourceSpans[0]!.scopeSpans[0]!.spans;
    return spans.map((span) => (kind === CACHED_HEX ? span.traceId : span.name));
  };
  const expected = (kind: number, strings: Buffer[]) => strings.map((bytes) => bytes.toString(kind === CACHED_HEX ? 'hex' : 'utf8'));
  /** The mask of a body of strings of these lengths (the slot count depends on the body's length only). */
  const maskFor = (kind: number, lengths: number[]) => cacheSlotsFor(body(kind, lengths.map((length) => Buffer.alloc(length))).length) - 1;

  it.each(kinds)('keeps %s longer than the cache holds out of it: none overwrites the next slot', (_, kind) => {
    // A long A in slot s, then a longer L in slot s - 1, whose bytes past the first MAX_CACHED_BYTES are those of
    // a B of A's length and slot: had L been stored, it would have overwritten A's bytes with B's.
    const n = MAX_CACHED_BYTES + 12;
    const overlap = n - 8;
    const mask = maskFor(kind, [n, MAX_CACHED_BYTES + overlap, n]);
    const random = letters(7 + kind);
    const a = first(() => random(n), (bytes) => slotOf(bytes, kind, mask) >= 1 && slotOf(bytes, kind, mask) < mask);
    const s = slotOf(a, kind, mask);
    const b = first(() => Buffer.concat([random(overlap, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'), a.subarray(overlap)]), (bytes) => slotOf(bytes, kind, mask) === s);
    const l = first(() => Buffer.concat([random(MAX_CACHED_BYTES), b.subarray(0, overlap)]), (bytes) => slotOf(bytes, kind, mask) === s - 1);
    expect(texts(kind, body(kind, [a, l, b]))).toEqual(expected(kind, [a, l, b]));
  });

  /** The `count` bytes from `at` backwards: what a cache reading `start - i` for `start + i` would see. */
  const backwards = (bytes: Buffer, at: number, count: number) => Buffer.from(Array.from({ length: count }, (_, i) => bytes[at - i]!));

  it.each([
    ['the bytes before it: a compare walking back from its start would find the first there', 1, 11],
    ["the bytes before the first: a store walking back from the first's start would keep them", 0, 13],
  ])('tells apart a cached string from a later one of its length and slot that matches %s', (_, chosen, seed) => {
    // The chosen string's first byte, then its length, its tag and its span's header, backwards: the other one.
    const n = 5;
    const mask = maskFor(CACHED_UTF8, [n, n]);
    const random = letters(seed);
    const pair = (pick: Buffer, other: Buffer) => (chosen === 0 ? [pick, other] : [other, pick]);
    const placed = (strings: Buffer[]) => {
      const bytes = body(CACHED_UTF8, strings);
      return { bytes, at: chosen === 0 ? bytes.indexOf(strings[0]!) : bytes.lastIndexOf(strings[1]!) };
    };
    const echo = (pick: Buffer) => {
      const { bytes, at } = placed(pair(pick, Buffer.alloc(n, 0x7a)));
      return backwards(bytes, at, n);
    };
    const pick = first(() => random(n), (bytes) => slotOf(echo(bytes), CACHED_UTF8, mask) === slotOf(bytes, CACHED_UTF8, mask));
    const strings = pair(pick, echo(pick));
    const { bytes, at } = placed(strings);
    expect(backwards(bytes, at, n)).toEqual(strings[1 - chosen]);
    expect(texts(CACHED_UTF8, bytes)).toEqual(expected(CACHED_UTF8, strings));
  });

  it('stores no byte past a string of the longest cached length, which would land in the next slot', () => {
    // A in slot s; C, of MAX_CACHED_BYTES bytes, in slot s - 1, followed in the body by the next span's tag; then
    // B, that tag and the rest of A, in slot s. Had C's following byte been stored, B would match A's bytes.
    const n = 5;
    const mask = maskFor(CACHED_UTF8, [n, MAX_CACHED_BYTES, n]);
    const random = letters(17);
    const layout = body(CACHED_UTF8, [Buffer.alloc(n), Buffer.alloc(MAX_CACHED_BYTES, 0x63), Buffer.alloc(n)]);
    const following = layout[layout.indexOf(Buffer.alloc(MAX_CACHED_BYTES, 0x63)) + MAX_CACHED_BYTES]!;
    const withFollowing = (a: Buffer) => Buffer.concat([Buffer.from([following]), a.subarray(1)]);
    const a = first(
      () => random(n),
      (bytes) => slotOf(bytes, CACHED_UTF8, mask) >= 1 && slotOf(withFollowing(bytes), CACHED_UTF8, mask) === slotOf(bytes, CACHED_UTF8, mask),
    );
    const s = slotOf(a, CACHED_UTF8, mask);
    const c = first(() => random(MAX_CACHED_BYTES), (bytes) => slotOf(bytes, CACHED_UTF8, mask) === s - 1);
    const b = withFollowing(a);
    const bytes = body(CACHED_UTF8, [a, c, b]);
    expect(bytes[bytes.indexOf(c) + MAX_CACHED_BYTES]).toBe(following);
    expect(texts(CACHED_UTF8, bytes)).toEqual(expected(CACHED_UTF8, [a, c, b]));
  });

  it("keys a slot by the string's own length: an id, then its first bytes as text 32 KiB further on", () => {
    // An id whose last two bytes are an empty field 3; then, 32,769 bytes further on, a text of its other bytes,
    // followed by that empty field: from the id's start and from the text's, the same bytes, then zeros to the end
    // of the body, which ends where the slots' bytes do. A cache keyed by the offsets' sum rather than the length
    // would find the id's key again (the hex kind's bit makes up the 65,536 the sums differ by) and hand the id's
    // hex back as the text.
    const slots = cacheSlotsFor(2 ** 15);
    const mask = slots - 1;
    const random = letters(19);
    const emptyField = len(3);
    const idOf = (text: Buffer) => Buffer.concat([text, emptyField]);
    const text = first(
      () => random(10),
      (candidate) => slotOf(idOf(candidate), CACHED_HEX, mask) === slotOf(candidate, CACHED_UTF8, mask) && slotOf(candidate, CACHED_UTF8, mask) >= slots / 2,
    );
    const id = idOf(text);
    const room = (slots - slotOf(text, CACHED_UTF8, mask)) * MAX_CACHED_BYTES;
    /** A field of `field` holding `fill`, `size` bytes in all. */
    const sized = (field: number, size: number, fill: number) => {
      for (let payload = Math.max(0, size - 6); ; payload++) {
        const candidate = len(field, Buffer.alloc(payload, fill));
        if (candidate.length === size) return candidate;
        if (candidate.length > size) throw new Error(`no field of ${size} bytes`);
      }
    };
    const zeros = sized(2, room - id.length, 0);
    const idStart = 2;
    const textStart = idStart + 2 ** 15 + 1;
    const filler = sized(4, textStart - 2 - (idStart + id.length + zeros.length), 0x20);
    const bytes = Buffer.concat([len(1, id), zeros, filler, len(1, text), emptyField, zeros]);
    expect([bytes.indexOf(id), bytes.lastIndexOf(text), bytes.length, cacheSlotsFor(bytes.length)]).toEqual([idStart, textStart, textStart + room, slots]);
    const r = new WireReader(bytes);
    const end = bytes.length;
    const skip = () => {
      r.readTag(end);
      r.pos = r.readEnd(end);
    };
    r.readTag(end);
    const read = [r.readRepeatedHex(end)];
    skip();
    skip();
    r.readTag(end);
    read.push(r.readString(end));
    r.readTag(end);
    read.push(r.readString(end));
    skip();
    expect([...read, r.pos]).toEqual([id.toString('hex'), text.toString(), '', end]);
  });
});
