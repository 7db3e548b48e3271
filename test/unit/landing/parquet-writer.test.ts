import { parquetMetadata } from 'hyparquet';
import { spanBatches, traceBatches } from '../../../lambda/landing/column-batches.js';
import { toLandableTrace } from '../../../lambda/landing/landable-trace.js';
import { SPANS, TRACES } from '../../../lambda/landing/landing-schema.js';
import { writeParquet } from '../../../lambda/landing/parquet-writer.js';
import { acceptedSpan, acceptedTrace, parquetRows, traceContext } from './landing-builders.js';

const arrayBuffer = (bytes: Uint8Array) => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;

describe('writeParquet', () => {
  // More than one page per chunk (pages are cut at ~1 MiB of text), nulls, empty and non-ASCII text.
  const long = 'Zürich 東京 🚀 '.repeat(60_000);
  const trace = acceptedTrace({}, 0);
  trace.spans = [
    acceptedSpan({ input: long, output: '', parent_span_id: null }, 0),
    acceptedSpan({ input: '{"q":"résumé"}', output: long, parent_span_id: 'p-0' }, 1),
    acceptedSpan({ input: long, output: '🚀', parent_span_id: null, span_id: '' }, 2),
    acceptedSpan({ input: '', output: '\ud800 lone surrogate', parent_span_id: 'p-1' }, 3),
    acceptedSpan({ input: long + long, output: long, parent_span_id: 'p-2' }, 4),
  ];
  const landable = [toLandableTrace(traceContext(), trace), toLandableTrace(traceContext(), acceptedTrace({}, 3))];

  it('reads back every span value, in several row groups, with the PLAIN text columns', async () => {
    const file = writeParquet(SPANS, spanBatches(landable, 3));

    const rows = await parquetRows(file.bytes);
    const spans = landable.flatMap((t) => t.trace.spans);
    expect(file.rows).toBe(8);
    expect(rows.map((r) => [r.span_id, r.parent_span_id, r.input, r.output])).toEqual(
      spans.map((s) => [s.span_id, s.parent_span_id, s.input, s.output.replace('\ud800', '\ufffd')]),
    );
    expect(rows.map((r) => r.span_index)).toEqual([0, 1, 2, 3, 4, 0, 1, 2]);
  });

  it('lays out each row group from its first column, chunks contiguous, columns in schema order', () => {
    for (const [spec, bytes] of [
      [SPANS, writeParquet(SPANS, spanBatches(landable, 3)).bytes],
      [TRACES, writeParquet(TRACES, traceBatches(landable, 1)).bytes],
    ] as const) {
      const metadata = parquetMetadata(arrayBuffer(bytes));
      let expectedStart = 4n;
      for (const group of metadata.row_groups) {
        const starts = group.columns.map((c) => c.meta_data!.dictionary_page_offset ?? c.meta_data!.data_page_offset);
        const sizes = group.columns.map((c) => c.meta_data!.total_compressed_size);
        expect(group.columns.map((c) => c.meta_data!.path_in_schema[0])).toEqual(spec.columns.map((c) => c.name));
        expect(starts[0]).toBe(expectedStart);
        expect(starts.reduce((a, b) => (a < b ? a : b))).toBe(expectedStart);
        expect(sizes.reduce((a, b) => a + b)).toBe(group.total_compressed_size);
        expectedStart += group.total_compressed_size!;
      }
    }
  });

  it('keeps random ids uncompressed and compresses the long text', () => {
    const metadata = parquetMetadata(arrayBuffer(writeParquet(SPANS, spanBatches(landable)).bytes));
    const codec = (name: string) => metadata.row_groups[0]!.columns.find((c) => c.meta_data!.path_in_schema[0] === name)!.meta_data!.codec;
    expect([codec('span_id'), codec('parent_span_id')]).toEqual(['UNCOMPRESSED', 'UNCOMPRESSED']);
    expect(codec('input')).not.toBe('UNCOMPRESSED');
  });
});
