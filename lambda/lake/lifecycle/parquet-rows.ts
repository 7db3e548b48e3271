import zlib from 'node:zlib';
import { type AsyncBuffer, type Compressors, type FileMetaData, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import type { ColumnBatch, ColumnValues } from '../../datasets/column-batches.js';
import { HASH_ORDER_METADATA_KEY } from '../../datasets/hash-parts.js';
import type { ColumnSpec, DatasetSpec } from '../../datasets/registry.js';

/** One row as read back: column name → value (strings, numbers, `bigint` for INT64 and timestamps in µs, string lists, null). */
export type Row = Record<string, unknown>;

type Decompress = (input: Uint8Array, outputLength: number) => Uint8Array;
const zstdDecompressSync = (zlib as { zstdDecompressSync?: (input: Uint8Array) => Uint8Array }).zstdDecompressSync;

/** The codecs the landing writes (see parquet-codec.ts): GZIP anywhere, ZSTD where node:zlib has it. */
export const LANDED_PARQUET_DECOMPRESSORS: Compressors = {
  GZIP: ((input) => zlib.gunzipSync(input)) satisfies Decompress,
  ...(zstdDecompressSync ? { ZSTD: ((input) => zstdDecompressSync(input)) satisfies Decompress } : {}),
};

// Timestamps stay integer microseconds: hyparquet's default Date would drop the last three digits.
const PARSERS = { timestampFromMicroseconds: (micros: bigint) => micros };

/**
 * Reads a Parquet object row group by row group, so only one row group's rows are alive at a time
 * (the caller keeps what it needs). `file` may fetch byte ranges lazily.
 */
export async function* readRowGroups(file: AsyncBuffer, spec: DatasetSpec, wanted?: HashOrders, parsed?: FileMetaData): AsyncGenerator<Row[]> {
  const metadata = parsed ?? (await parquetMetadataAsync(file));
  const present = new Set(metadata.schema.map((element) => element.name));
  const columns = spec.columns.map((column) => column.name).filter((name) => present.has(name));
  const orders = wanted && rowGroupOrders(metadata.key_value_metadata, metadata.row_groups.length);
  let rowStart = 0;
  for (const [index, group] of metadata.row_groups.entries()) {
    const rowEnd = rowStart + Number(group.num_rows);
    const range = orders?.[index];
    // A row group whose rows all hash outside the wanted orders is skipped unread.
    if (!range || (range[1] >= wanted![0] && range[0] <= wanted![1])) {
      yield (await parquetReadObjects({ file, metadata, columns, rowStart, rowEnd, compressors: LANDED_PARQUET_DECOMPRESSORS, parsers: PARSERS })) as Row[];
    }
    rowStart = rowEnd;
  }
}

/** An inclusive range of hash orders (lambda/datasets/hash-parts.ts). */
export type HashOrders = [number, number];

/** The hash orders of each row group, from the footer the landing wrote for a hash-ordered group; undefined when absent or not one per row group. */
function rowGroupOrders(metadata: { key: string; value?: string }[] | undefined, rowGroups: number): HashOrders[] | undefined {
  const value = metadata?.find((entry) => entry.key === HASH_ORDER_METADATA_KEY)?.value;
  if (value === undefined) return undefined;
  try {
    const parsed = JSON.parse(value) as unknown;
    const valid = Array.isArray(parsed) && parsed.length === rowGroups && parsed.every((r) => Array.isArray(r) && r.length === 2 && r.every(Number.isInteger));
    return valid ? (parsed as HashOrders[]) : undefined;
  } catch {
    return undefined;
  }
}

/** Rows in the file per its footer, and whether its row groups carry hash orders, without reading any column. */
export async function inputShape(file: AsyncBuffer): Promise<{ rows: number; hashOrdered: boolean }> {
  return shapeOf(await parquetMetadataAsync(file));
}

export function shapeOf(metadata: FileMetaData): { rows: number; hashOrdered: boolean } {
  return { rows: Number(metadata.num_rows), hashOrdered: rowGroupOrders(metadata.key_value_metadata, metadata.row_groups.length) !== undefined };
}

/** A byte range of a file kept in memory. */
interface KeptRange {
  start: number;
  bytes: Uint8Array;
}

/**
 * The part of a file read whole that a part worker's hash range can need: for a hash-ordered file, the bytes of the
 * row groups whose orders meet `share`, copied out so the rest of the file can be collected; any other file whole.
 * A read outside them (none is expected: {@link readRowGroups} is given the footer and reads only those row groups)
 * goes to `reread`, so a wrong guess costs a GET, never a wrong answer.
 */
export function retainShare(file: ArrayBuffer, metadata: FileMetaData, share: HashOrders | undefined, reread: () => Promise<AsyncBuffer>): { file: AsyncBuffer; bytes: number } {
  const orders = share && rowGroupOrders(metadata.key_value_metadata, metadata.row_groups.length);
  if (!orders) return { file, bytes: file.byteLength };
  const kept: KeptRange[] = [];
  for (const [index, group] of metadata.row_groups.entries()) {
    const range = orders[index]!;
    if (range[1] < share![0] || range[0] > share![1] || group.columns.length === 0) continue;
    let start = Infinity;
    let end = 0;
    for (const { meta_data: chunk } of group.columns) {
      if (!chunk) return { file, bytes: file.byteLength };
      const first = Number(chunk.dictionary_page_offset ?? chunk.data_page_offset);
      start = Math.min(start, first);
      end = Math.max(end, first + Number(chunk.total_compressed_size));
    }
    kept.push({ start, bytes: new Uint8Array(file, start, end - start).slice() });
  }
  const bytes = kept.reduce((sum, range) => sum + range.bytes.byteLength, 0);
  return {
    bytes,
    file: {
      byteLength: file.byteLength,
      slice(start: number, end = file.byteLength) {
        const range = kept.find((r) => r.start <= start && end <= r.start + r.bytes.byteLength);
        if (range) return range.bytes.slice(start - range.start, end - range.start).buffer;
        return reread().then((whole) => whole.slice(start, end));
      },
    },
  };
}

/**
 * The value a column takes in a row of a file written before the column existed: null where the column is
 * nullable, else the type's zero value. This is what adding a column to the registry means for older objects.
 */
function missingValue(column: ColumnSpec): unknown {
  switch (column.type) {
    case 'nullable_string':
      return null;
    case 'string':
      return '';
    case 'string_list':
      return [];
    case 'int64':
    case 'timestamp':
      return 0n;
    default:
      return 0;
  }
}

function columnValues(column: ColumnSpec, rows: readonly Row[]): ColumnValues {
  const value = (row: Row) => row[column.name] ?? missingValue(column);
  switch (column.type) {
    case 'string':
      return rows.map((row) => value(row) as string);
    case 'nullable_string':
      return rows.map((row) => (row[column.name] ?? null) as string | null);
    case 'int32':
      return Int32Array.from(rows, (row) => value(row) as number);
    case 'double':
      return Float64Array.from(rows, (row) => value(row) as number);
    case 'int64':
    case 'timestamp':
      return BigInt64Array.from(rows, (row) => BigInt(value(row) as bigint | number));
    case 'string_list':
      return rows.map((row) => value(row) as string[]);
  }
}

/** Rows as the Parquet writer's column batches, in the dataset's column order, `rowsPerBatch` rows per row group. */
export function* rowBatches(spec: DatasetSpec, rows: readonly Row[], rowsPerBatch: number): Generator<ColumnBatch> {
  for (let start = 0; start < rows.length; start += rowsPerBatch) {
    const chunk = rows.slice(start, start + rowsPerBatch);
    yield { rows: chunk.length, columns: spec.columns.map((column) => columnValues(column, chunk)) };
  }
}
