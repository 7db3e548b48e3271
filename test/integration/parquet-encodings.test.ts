import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { tableFromIPC, Vector } from 'apache-arrow';
import { parquetMetadata } from 'hyparquet';
import { type ColumnBatch, spanBatches } from '../../lambda/datasets/column-batches.js';
import { toLandableTrace } from '../../lambda/landing/landable-trace.js';
import { type DatasetSpec, SPANS } from '../../lambda/datasets/registry.js';
import { writeParquet } from '../../lambda/datasets/parquet/parquet-writer.js';
import { acceptedSpan, acceptedTrace, parquetRows, traceContext } from '../../devkit/builders/landing-builders.js';
import { equals } from '@jest/expect-utils';

const wasm = createRequire(__filename)('parquet-wasm/node') as typeof import('parquet-wasm/node');

/**
 * Every encoding the landing writer chooses, read back by DuckDB and by parquet-wasm (the Rust reader) as well
 * as hyparquet: lists with empty, one and many elements, as a dictionary and PLAIN, over several pages; `long`
 * text as a dictionary and PLAIN, with nulls; int64 at the ends of the safe range.
 */
describe('landing Parquet encodings, read by DuckDB and parquet-wasm', () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'parquet-encodings-'));
  let duck: Awaited<ReturnType<Awaited<ReturnType<typeof DuckDBInstance.create>>['connect']>>;

  beforeAll(async () => {
    duck = await (await DuckDBInstance.create(':memory:')).connect();
  });

  afterAll(() => {
    duck?.closeSync();
    rmSync(scratch, { recursive: true, force: true });
  });

  async function duckRows(bytes: Uint8Array, select: string): Promise<Record<string, unknown>[]> {
    const file = path.join(scratch, `f-${Math.random().toString(36).slice(2)}.parquet`);
    writeFileSync(file, bytes);
    const reader = await duck.runAndReadAll(`SELECT ${select} FROM read_parquet('${file}')`);
    return reader.getRowObjectsJson() as Record<string, unknown>[];
  }

  /** Rows read by parquet-wasm, Arrow list vectors as plain arrays. */
  const wasmRows = (bytes: Uint8Array) =>
    [...tableFromIPC(wasm.readParquet(bytes).intoIPCStream())].map((row) =>
      Object.fromEntries(Object.entries(row.toJSON() as Record<string, unknown>).map(([name, value]) => [name, value instanceof Vector ? [...value] : value])),
    );

  const rows = 3_000;
  const spec: DatasetSpec = {
    name: 'spans',
    columns: [
      { name: 'i', type: 'int32' },
      { name: 'repeated_tags', type: 'string_list' },
      { name: 'distinct_tags', type: 'string_list' },
      { name: 'repeated_long', type: 'nullable_string', shape: 'long' },
      { name: 'distinct_long', type: 'nullable_string', shape: 'long' },
      { name: 'n', type: 'int64' },
    ],
  };
  const big = 'x'.repeat(1_000);
  const repeatedTags = Array.from({ length: rows }, (_, r) => (r % 3 === 0 ? [] : Array.from({ length: r % 5 }, (_, k) => `team-${k}`)));
  // ~3 MB of distinct elements: PLAIN, several pages, some rows empty.
  const distinctTags = Array.from({ length: rows }, (_, r) => (r % 7 === 0 ? [] : [`${r}-${big}`, `é-${r}`]));
  const repeatedLong = Array.from({ length: rows }, (_, r) => (r % 4 === 0 ? null : r % 2 ? '{}' : '{"retries":0,"tags":["prod"]}'));
  const distinctLong = Array.from({ length: rows }, (_, r) => (r % 10 === 0 ? null : `{"request":${r},"body":"${big}"}`));
  const n = Array.from({ length: rows }, (_, r) => [0n, -1n, 2n ** 32n, -(2n ** 32n) - 1n, 2n ** 53n - 1n, -(2n ** 53n - 1n)][r % 6]!);
  const batch: ColumnBatch = {
    rows,
    columns: [Int32Array.from({ length: rows }, (_, r) => r), repeatedTags, distinctTags, repeatedLong, distinctLong, BigInt64Array.from(n)],
  };
  const file = writeParquet(spec, [batch, batch]);
  const twice = <T>(values: T[]) => [...values, ...values];
  const columns = { repeated_tags: repeatedTags, distinct_tags: distinctTags, repeated_long: repeatedLong, distinct_long: distinctLong };

  /** Rows whose column differs from what was written, at most three (a diff of thousands of long values would swamp the report). */
  function differences(read: Record<string, unknown>[], column: string, written: unknown[], normalise = (value: unknown) => value): unknown[] {
    const expected = twice(written);
    const found: unknown[] = read.length === expected.length ? [] : [`${read.length} rows instead of ${expected.length}`];
    for (let r = 0; r < expected.length && found.length < 3; r++) {
      if (!equals(normalise(read[r]?.[column]), expected[r])) found.push({ row: r, column, read: read[r]?.[column], written: expected[r] });
    }
    return found;
  }

  it('chooses a dictionary or PLAIN per column and cuts the large list into pages', () => {
    const [, repeated, distinct, repeatedText, distinctText] = parquetMetadata(file.bytes.buffer.slice(file.bytes.byteOffset, file.bytes.byteOffset + file.bytes.byteLength) as ArrayBuffer).row_groups[0]!.columns.map((c) => c.meta_data!);
    expect(repeated!.encodings).toContain('RLE_DICTIONARY');
    expect(distinct!.encodings).not.toContain('RLE_DICTIONARY');
    expect(distinct!.encoding_stats![0]!.count).toBeGreaterThan(1);
    expect(repeatedText!.encodings).toContain('RLE_DICTIONARY');
    expect(distinctText!.encodings).not.toContain('RLE_DICTIONARY');
    expect(repeated!.statistics).toMatchObject({ min_value: 'team-0', max_value: 'team-3', null_count: BigInt(repeatedTags.filter((tags) => tags.length === 0).length) });
  });

  it('reads back the same values with DuckDB', async () => {
    const read = await duckRows(file.bytes, 'repeated_tags, distinct_tags, repeated_long, distinct_long, n::VARCHAR AS n');
    for (const [column, written] of Object.entries(columns)) expect(differences(read, column, written)).toEqual([]);
    expect(differences(read, 'n', n.map(String))).toEqual([]);
  });

  it('reads back the same values with parquet-wasm and hyparquet', async () => {
    for (const read of [wasmRows(file.bytes), await parquetRows(file.bytes)]) {
      for (const [column, written] of Object.entries(columns)) expect(differences(read, column, written)).toEqual([]);
      expect(differences(read, 'n', n, (value) => BigInt(value as bigint))).toEqual([]);
    }
  });

  it('lands span rows built from the registry that DuckDB and parquet-wasm read alike', async () => {
    const trace = acceptedTrace({}, 4);
    trace.spans[2] = acceptedSpan({ attributes: '{"tags":["a","b","c"]}', error_message: 'boom', input_tokens: 2 ** 53 - 1, total_tokens: 2 ** 53 - 1 }, 2);
    trace.spans[3] = acceptedSpan({ attributes: '{}' }, 3);
    const landable = [toLandableTrace(traceContext(), trace)];
    const bytes = writeParquet(SPANS, spanBatches(landable, 3)).bytes;

    const expected = trace.spans.map((span, i) => [span.span_id, landable[0]!.spanTags[i], span.error_message, String(span.input_tokens)]);
    const byDuck = await duckRows(bytes, 'span_id, tags, error_message, input_tokens::VARCHAR AS input_tokens');
    expect(byDuck.map((r) => [r.span_id, r.tags, r.error_message, r.input_tokens])).toEqual(expected);
    expect(wasmRows(bytes).map((r) => [r.span_id, r.tags, r.error_message, String(r.input_tokens)])).toEqual(expected);
  });
});
