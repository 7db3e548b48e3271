import { endianness } from 'node:os';
import type { OffsetIndex } from 'hyparquet';
import { type ChunkTarget, dataPageHeader, type WrittenChunk, writePage, writtenChunk } from './text-chunks.js';

/** A required numeric column's values, in the typed array that holds them in memory. */
export type NumberValues = Int32Array | BigInt64Array | Float64Array;

/** Pages are cut at about hyparquet-writer's 1 MiB page size. */
const PAGE_BYTES = 1 << 20;

// PLAIN numbers are little-endian, as is every Lambda architecture (x86_64, arm64): the typed arrays'
// bytes are the page.
const LITTLE_ENDIAN = endianness() === 'LE';

function parquetType(values: NumberValues): 'INT32' | 'INT64' | 'DOUBLE' {
  if (values instanceof Int32Array) return 'INT32';
  return values instanceof BigInt64Array ? 'INT64' : 'DOUBLE';
}

/** Min and max; for doubles, zeros normalised as the Parquet spec asks (min -0, max +0). Values are never NaN here. */
function minMaxOf(values: NumberValues): { min: number | bigint; max: number | bigint } {
  let min = values[0]!;
  let max = values[0]!;
  for (let i = 1; i < values.length; i++) {
    const value = values[i]!;
    if (value < min) min = value;
    if (value > max) max = value;
  }
  return values instanceof Float64Array ? { min: min === 0 ? -0 : min, max: max === 0 ? 0 : max } : { min, max };
}

/**
 * Writes one required numeric column chunk, PLAIN-encoded, with min/max statistics: the page data is the
 * typed array's own bytes, where hyparquet-writer reads, checks and writes every value one by one (and a
 * `BigInt` per read of a `BigInt64Array`). `values` must not be empty.
 */
export function writeNumberChunk(target: ChunkTarget, name: string, values: NumberValues): WrittenChunk {
  if (!LITTLE_ENDIAN) throw new Error('PLAIN numbers from typed arrays need a little-endian platform');
  const { writer } = target;
  const type = parquetType(values);
  const chunkStart = writer.offset;
  const page_locations: OffsetIndex['page_locations'] = [];
  const perPage = Math.floor(PAGE_BYTES / values.BYTES_PER_ELEMENT);
  let uncompressedBytes = 0;
  for (let start = 0; start < values.length; start += perPage) {
    const page = values.subarray(start, start + perPage);
    const pageStart = writer.offset;
    const header = dataPageHeader(target, { values: page.length, nulls: 0, rows: page.length, encoding: 'PLAIN', definitionLevelBytes: 0 });
    uncompressedBytes += writePage(target, header, new Uint8Array(0), new Uint8Array(page.buffer, page.byteOffset, page.byteLength));
    page_locations.push({ offset: BigInt(pageStart), compressed_page_size: writer.offset - pageStart, first_row_index: BigInt(start) });
  }
  const { min, max } = minMaxOf(values);
  return writtenChunk(target, chunkStart, uncompressedBytes, page_locations, {
    type,
    encodings: ['PLAIN'],
    path_in_schema: [name],
    num_values: BigInt(values.length),
    statistics: { min_value: min, max_value: max, null_count: 0n, ...(type === 'DOUBLE' ? { nan_count: 0n } : {}) },
    encoding_stats: [{ page_type: 'DATA_PAGE_V2', encoding: 'PLAIN', count: page_locations.length }],
  });
}
