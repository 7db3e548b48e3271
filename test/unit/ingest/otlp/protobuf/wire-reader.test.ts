import { WireReader } from '../../../../../lambda/ingest/otlp/protobuf/wire-reader.js';
import { len, varint, varintField } from '../../../../support/protobuf-bytes.js';

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
