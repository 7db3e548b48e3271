import { parquetMetadata } from 'hyparquet';
import { ByteWriter, DrainingByteWriter, ParquetWriter, writePageHeader, writeRleBitPackedHybrid } from '../../../../lambda/datasets/parquet/hyparquet-writer-adapter.js';

/** What the landing writer relies on in hyparquet-writer beyond its documented API (see hyparquet-writer-adapter.ts). */
describe('hyparquet-writer internals the landing writer relies on', () => {
  it('exports the page header and RLE/bit-packed writers', () => {
    expect(typeof writePageHeader).toBe('function');
    expect(typeof writeRleBitPackedHybrid).toBe('function');
    const writer = new ByteWriter();
    writeRleBitPackedHybrid(writer, [0, 1, 2, 3, 3, 3, 3, 3, 3, 3], 2);
    expect(writer.offset).toBeGreaterThan(0);
  });

  it('keeps the fields own column chunks are appended through: writer, row_groups, num_rows, pendingIndexes', () => {
    const writer = new ByteWriter();
    const parquet = new ParquetWriter({ writer, schema: [{ name: 'schema', num_children: 1 }, { name: 'n', type: 'INT32', repetition_type: 'REQUIRED' }] });
    expect(parquet.writer).toBe(writer);
    expect(Array.isArray(parquet.row_groups)).toBe(true);
    expect(Array.isArray(parquet.pendingIndexes)).toBe(true);
    expect(typeof parquet.num_rows).toBe('bigint');
    void parquet.write({ columnData: [{ name: 'n', data: new Int32Array([1, 2, 3]) }] });
    expect(parquet.row_groups).toHaveLength(1);
    expect(parquet.row_groups[0]!.columns).toHaveLength(1);
    void parquet.finish();
    const bytes = writer.getBytes();
    expect(Number(parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer).num_rows)).toBe(3);
  });

  it('appends at index and records positions by offset, so a drained writer keeps absolute offsets and the pieces make the file', () => {
    const schema = [{ name: 'schema', num_children: 1 }, { name: 'n', type: 'INT32', repetition_type: 'REQUIRED' }] as const;
    const whole = new ByteWriter();
    const drained = new DrainingByteWriter();
    const pieces: Uint8Array[] = [];
    for (const writer of [whole, drained]) {
      const parquet = new ParquetWriter({ writer, schema: [...schema] });
      for (let group = 0; group < 3; group++) {
        void parquet.write({ columnData: [{ name: 'n', data: Int32Array.from({ length: 100 }, (_, i) => group * 100 + i) }] });
        if (writer === drained) pieces.push(drained.drain());
      }
      void parquet.finish();
    }
    expect(drained.offset).toBe(whole.offset);
    expect(drained.buffered).toBeLessThan(drained.offset);
    pieces.push(drained.drain());
    expect(drained.buffered).toBe(0);
    expect(Buffer.concat(pieces)).toEqual(Buffer.from(whole.getBytes()));
  });
});
