import { WireReader } from '../../../../../lambda/ingest/otlp/protobuf/wire-reader.js';
import { len, varintField } from '../../../../support/protobuf-bytes.js';

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
