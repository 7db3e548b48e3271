import { parquetMetadata } from 'hyparquet';
import { spanBatches } from '../../../../lambda/datasets/column-batches.js';
import { toLandableTrace } from '../../../../lambda/landing/landable-trace.js';
import { SPANS } from '../../../../lambda/datasets/registry.js';
import { ParquetStreamWriter, writeParquet } from '../../../../lambda/datasets/parquet/parquet-writer.js';
import { acceptedTrace, parquetRows, traceContext } from '../../../../devkit/builders/landing-builders.js';

const concat = (pieces: Uint8Array[]) => Buffer.concat(pieces);

describe('ParquetStreamWriter', () => {
  const landable = Array.from({ length: 12 }, (_, i) => toLandableTrace(traceContext(), acceptedTrace({}, 1 + (i % 4))));

  it('hands out the file in pieces that, concatenated, are byte for byte what writeParquet writes', async () => {
    const stream = new ParquetStreamWriter(SPANS, undefined, 'trace-ingest landing');
    const pieces: Uint8Array[] = [];
    for (const batch of spanBatches(landable, 5)) {
      stream.write(batch);
      expect(stream.buffered).toBeGreaterThan(0);
      pieces.push(stream.take());
      expect(stream.buffered).toBe(0);
    }
    pieces.push(stream.finish());

    const whole = writeParquet(SPANS, spanBatches(landable, 5));
    expect(concat(pieces)).toEqual(Buffer.from(whole.bytes));
    expect(stream.rows).toBe(whole.rows);
    expect(stream.rowGroups).toBe(Math.ceil(whole.rows / 5));
    // One piece per row group (the first also carries the 4-byte header), then the footer: no piece holds the file.
    expect(pieces).toHaveLength(stream.rowGroups + 1);
    for (const piece of pieces) expect(piece.length).toBeLessThan(whole.bytes.length);
    expect((await parquetRows(concat(pieces))).map((row) => row.span_id)).toEqual(landable.flatMap((t) => t.trace.spans.map((s) => s.span_id)));
  });

  it('keeps absolute offsets when pieces are taken at any size: the metadata points into the concatenated file', () => {
    const stream = new ParquetStreamWriter(SPANS);
    const pieces: Uint8Array[] = [];
    let batches = 0;
    for (const batch of spanBatches(landable, 3)) {
      stream.write(batch);
      if (++batches % 2 === 0) pieces.push(stream.take());
    }
    pieces.push(stream.finish());
    const file = concat(pieces);

    const metadata = parquetMetadata(file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength) as ArrayBuffer);
    expect(Number(metadata.num_rows)).toBe(stream.rows);
    let start = 4n;
    for (const group of metadata.row_groups) {
      expect(group.columns[0]!.meta_data!.dictionary_page_offset ?? group.columns[0]!.meta_data!.data_page_offset).toBe(start);
      start += group.total_compressed_size!;
    }
  });

  it('writes a valid empty file, and refuses writes after finish', async () => {
    const stream = new ParquetStreamWriter(SPANS);
    const file = concat([stream.take(), stream.finish()]);
    expect(await parquetRows(file)).toEqual([]);
    expect(() => stream.write({ rows: 1, columns: [] })).toThrow('after finish');
    expect(() => stream.finish()).toThrow('twice');
  });
});
