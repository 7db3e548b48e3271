import { parquetMetadata } from 'hyparquet';
import * as zlib from 'node:zlib';
import { gunzipSync, gzipSync } from 'node:zlib';
import { spanBatches, traceBatches } from '../../../../lambda/datasets/column-batches.js';
import { toLandableTrace } from '../../../../lambda/landing/landable-trace.js';
import { type DatasetSpec, SPANS, TRACES } from '../../../../lambda/datasets/registry.js';
import { parquetCodec } from '../../../../lambda/datasets/parquet/parquet-codec.js';
import { writeParquet } from '../../../../lambda/datasets/parquet/parquet-writer.js';
import { acceptedSpan, acceptedTrace, parquetRows, traceContext } from '../../../../devkit/builders/landing-builders.js';

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

  it('dictionary-encodes the plain string columns, with min/max in code point order and null counts', async () => {
    // UTF-16 order would put '\uffff' after '😀' (a surrogate pair); Parquet orders strings by UTF-8 bytes.
    const values = ['b', null, 'a', '\uffff', '😀', 'é', 'a', null, 'b'];
    const spec: DatasetSpec = { name: 'spans', columns: [{ name: 'n', type: 'int32' }, { name: 's', type: 'nullable_string' }, { name: 'empty', type: 'nullable_string' }] };
    const batch = { rows: values.length, columns: [Int32Array.from(values, (_, i) => i), values, values.map(() => null)] };
    const file = writeParquet(spec, [batch, batch]);

    expect((await parquetRows(file.bytes)).map((r) => r.s)).toEqual([...values, ...values]);
    for (const group of parquetMetadata(arrayBuffer(file.bytes)).row_groups) {
      const [, s, empty] = group.columns.map((c) => c.meta_data!);
      expect(s!.encodings).toContain('RLE_DICTIONARY');
      expect(s!.statistics).toMatchObject({ min_value: 'a', max_value: '😀', null_count: 2n });
      expect(empty!.statistics).toMatchObject({ null_count: 9n });
    }
  });

  it('writes a long-text column of only nulls and a list column of only empty lists PLAIN, with no empty dictionary', async () => {
    const rows = 5;
    const spec: DatasetSpec = {
      name: 'spans',
      columns: [
        { name: 'n', type: 'int32' },
        { name: 'no_error', type: 'nullable_string', shape: 'long' },
        { name: 'no_tags', type: 'string_list' },
      ],
    };
    const file = writeParquet(spec, [{ rows, columns: [Int32Array.from({ length: rows }, (_, i) => i), Array(rows).fill(null), Array.from({ length: rows }, () => [])] }]);

    expect((await parquetRows(file.bytes)).map((r) => [r.no_error, r.no_tags])).toEqual(Array.from({ length: rows }, () => [null, []]));
    for (const column of parquetMetadata(arrayBuffer(file.bytes)).row_groups[0]!.columns.slice(1)) {
      expect(column.meta_data!.encodings).not.toContain('RLE_DICTIONARY');
      expect(column.meta_data!.dictionary_page_offset).toBeUndefined();
    }
  });

  it('writes numbers PLAIN from their typed arrays, in pages of ~1 MiB, with min/max', async () => {
    const rows = 140_000; // more than one page of INT64 (131,072 values)
    const spec: DatasetSpec = {
      name: 'spans',
      columns: [
        { name: 'i', type: 'int32' },
        { name: 'n', type: 'int64' },
        { name: 'd', type: 'double' },
        { name: 't', type: 'timestamp' },
        { name: 'l', type: 'string_list' },
      ],
    };
    const i = Int32Array.from({ length: rows }, (_, k) => k - 5);
    const n = BigInt64Array.from({ length: rows }, (_, k) => BigInt(k) * 3n - 2n ** 53n);
    const d = Float64Array.from({ length: rows }, (_, k) => (k % 2 ? 0 : -k / 4));
    const t = BigInt64Array.from({ length: rows }, (_, k) => 1_795_341_600_000_000n + BigInt(k));
    const file = writeParquet(spec, [{ rows, columns: [i, n, d, t, Array.from({ length: rows }, () => [])] }]);

    const read = await parquetRows(file.bytes);
    expect(read.map((r) => r.i)).toEqual([...i]);
    expect(read.map((r) => r.n)).toEqual([...n]);
    expect(read.map((r) => r.d)).toEqual([...d]);
    expect(read[rows - 1]!.t).toEqual(new Date(Number(t[rows - 1]! / 1000n)));
    const [ci, cn, cd, ct] = parquetMetadata(arrayBuffer(file.bytes)).row_groups[0]!.columns.map((c) => c.meta_data!);
    expect(ci!.statistics).toMatchObject({ min_value: -5, max_value: rows - 6 });
    expect(cn!.statistics).toMatchObject({ min_value: -(2n ** 53n), max_value: BigInt(rows - 1) * 3n - 2n ** 53n });
    expect(Object.is(cd!.statistics!.max_value, 0)).toBe(true);
    expect(cd!.statistics!.min_value).toBe(-(rows - 2) / 4);
    expect(ct!.statistics).toMatchObject({ min_value: new Date(1_795_341_600_000), null_count: 0n });
    expect(cn!.encoding_stats).toEqual([{ page_type: 'DATA_PAGE_V2', encoding: 'PLAIN', count: 2 }]);
  });

  it('keeps the statistics of the other string columns', () => {
    const metadata = parquetMetadata(arrayBuffer(writeParquet(SPANS, spanBatches(landable)).bytes));
    const stats = Object.fromEntries(metadata.row_groups[0]!.columns.map((c) => [c.meta_data!.path_in_schema[0], c.meta_data!.statistics]));
    expect(stats.name).toMatchObject({ min_value: 'step-0', max_value: 'step-4', null_count: 0n });
    expect(stats.span_id).toBeUndefined();
  });

  const codecs = (bytes: Uint8Array) =>
    Object.fromEntries(parquetMetadata(arrayBuffer(bytes)).row_groups[0]!.columns.map((c) => [c.meta_data!.path_in_schema[0], c.meta_data!.codec]));

  it('keeps random ids uncompressed and compresses every other column with the codec', () => {
    const codec = { codec: 'GZIP' as const, compress: jest.fn((bytes: Uint8Array) => gzipSync(bytes)) };
    const file = writeParquet(SPANS, spanBatches(landable), codec);

    const { span_id, parent_span_id, ...others } = codecs(file.bytes);
    expect([span_id, parent_span_id]).toEqual(['UNCOMPRESSED', 'UNCOMPRESSED']);
    expect(new Set(Object.values(others))).toEqual(new Set(['GZIP']));
    expect(codec.compress).toHaveBeenCalled();
  });

  it('writes ZSTD chunks with the compressor parquetCodec picks when the runtime has zstd', async () => {
    // Node 20 has no zstd: a stand-in compressor (gzip) checks that the chunks are labelled ZSTD and hold its output.
    const zstd = jest.fn((bytes: Uint8Array, _options: { params: Record<number, number> }) => gzipSync(bytes));
    const codec = parquetCodec(zstd);
    const file = writeParquet(SPANS, spanBatches(landable), codec);

    expect(codec.codec).toBe('ZSTD');
    expect(zstd.mock.calls[0]![1]).toEqual({ params: { 100: 1 } }); // ZSTD_c_compressionLevel 1
    expect(codecs(file.bytes).input).toBe('ZSTD');
    const rows = await parquetRows(file.bytes, { ZSTD: (input) => gunzipSync(input) });
    expect(rows.map((r) => r.input)).toEqual(landable.flatMap((t) => t.trace.spans.map((s) => s.input)));
  });
});

describe('parquetCodec', () => {
  it('falls back to GZIP level 1 without zstd, readable by a plain gunzip', () => {
    const codec = parquetCodec(null);
    const bytes = new TextEncoder().encode('{"q":"hello"}'.repeat(100));

    expect(codec.codec).toBe('GZIP');
    expect(gunzipSync(codec.compress(bytes))).toEqual(Buffer.from(bytes));
    expect(codec.compress(bytes)).toEqual(gzipSync(bytes, { level: 1 }));
  });

  it('uses node:zlib zstd when this Node has it', () => {
    const hasZstd = 'zstdCompressSync' in zlib;
    expect(parquetCodec().codec).toBe(hasZstd ? 'ZSTD' : 'GZIP');
  });
});
