import type { ColumnChunk, CompressionCodec, OffsetIndex } from 'hyparquet';
import type { Writer } from 'hyparquet-writer';
import { writePageHeader } from 'hyparquet-writer/src/datapage.js';

/** Values per page are cut at this many UTF-16 code units, about hyparquet-writer's 1 MiB page size. */
const PAGE_CHARS = 1 << 20;

/** A reusable output buffer for one file's pages: growing it per page would churn external memory. */
export interface PageScratch {
  buffer: Buffer;
}

/** A written column chunk, with what the row group and the offset index need about it. */
export interface TextChunk {
  chunk: ColumnChunk;
  offsetIndex: OffsetIndex;
  uncompressedBytes: number;
}

/** Where a column chunk's pages are written and how they are compressed. */
export interface TextChunkTarget {
  writer: Writer;
  scratch: PageScratch;
  codec: CompressionCodec;
  compress: ((bytes: Uint8Array) => Uint8Array) | undefined;
}

function pushVarInt(bytes: number[], value: number): void {
  while (value > 0x7f) {
    bytes.push((value & 0x7f) | 0x80);
    value = Math.floor(value / 128);
  }
  bytes.push(value);
}

/** Definition levels (0 null, 1 present) as RLE runs of bit width 1, the hybrid encoding data page v2 stores unprefixed. */
function definitionLevels(values: readonly (string | null)[], start: number, end: number): Uint8Array {
  const bytes: number[] = [];
  for (let i = start; i < end; ) {
    const present = values[i] !== null;
    let j = i + 1;
    while (j < end && (values[j] !== null) === present) j++;
    pushVarInt(bytes, (j - i) * 2);
    bytes.push(present ? 1 : 0);
    i = j;
  }
  return Uint8Array.from(bytes);
}

/** PLAIN values (4-byte little-endian length, UTF-8 bytes) of the non-null values in `[start, end)`, in the scratch buffer. */
function plainValues(values: readonly (string | null)[], start: number, end: number, scratch: PageScratch): Buffer {
  let capacity = 0;
  for (let i = start; i < end; i++) capacity += 4 + 3 * (values[i]?.length ?? 0);
  if (scratch.buffer.length < capacity) scratch.buffer = Buffer.allocUnsafe(Math.max(capacity, 2 * scratch.buffer.length));
  const buffer = scratch.buffer;
  let offset = 0;
  for (let i = start; i < end; i++) {
    const value = values[i];
    if (value === null || value === undefined) continue;
    const length = buffer.write(value, offset + 4);
    buffer.writeUInt32LE(length, offset);
    offset += 4 + length;
  }
  return buffer.subarray(0, offset);
}

function writePage(target: TextChunkTarget, values: readonly (string | null)[], start: number, end: number, nullable: boolean): number {
  const { writer } = target;
  const levels = nullable ? definitionLevels(values, start, end) : new Uint8Array(0);
  let nulls = 0;
  if (nullable) for (let i = start; i < end; i++) if (values[i] === null) nulls++;
  const data = plainValues(values, start, end, target.scratch);
  const stored = target.compress ? target.compress(data) : data;
  const headerStart = writer.offset;
  writePageHeader(writer, {
    type: 'DATA_PAGE_V2',
    uncompressed_page_size: levels.length + data.length,
    compressed_page_size: levels.length + stored.length,
    data_page_header_v2: {
      num_values: end - start,
      num_nulls: nulls,
      num_rows: end - start,
      encoding: 'PLAIN',
      definition_levels_byte_length: levels.length,
      repetition_levels_byte_length: 0,
      is_compressed: target.compress !== undefined,
    },
  });
  const headerBytes = writer.offset - headerStart;
  writer.appendBytes(levels);
  writer.appendBytes(stored);
  return headerBytes + levels.length + data.length;
}

/**
 * Writes one flat UTF-8 column chunk, PLAIN-encoded in data pages v2, the way hyparquet-writer would (same
 * page size, page layout and metadata, no statistics) but encoding each page's values into one buffer with
 * `Buffer.write` instead of allocating a `Uint8Array` per value, which was most of the time spent on the
 * long text and id columns. `values` holds strings, or nulls when `nullable`.
 */
export function writePlainTextChunk(target: TextChunkTarget, name: string, values: readonly (string | null)[], nullable: boolean): TextChunk {
  const { writer } = target;
  const chunkStart = writer.offset;
  const page_locations: OffsetIndex['page_locations'] = [];
  let uncompressedBytes = 0;
  for (let start = 0; start < values.length; ) {
    let end = start;
    let chars = 0;
    while (end < values.length && (end === start || chars < PAGE_CHARS)) chars += values[end++]?.length ?? 0;
    const pageStart = writer.offset;
    uncompressedBytes += writePage(target, values, start, end, nullable);
    page_locations.push({ offset: BigInt(pageStart), compressed_page_size: writer.offset - pageStart, first_row_index: BigInt(start) });
    start = end;
  }
  const chunk: ColumnChunk = {
    file_offset: BigInt(chunkStart),
    meta_data: {
      type: 'BYTE_ARRAY',
      encodings: nullable ? ['PLAIN', 'RLE'] : ['PLAIN'],
      path_in_schema: [name],
      codec: target.codec,
      num_values: BigInt(values.length),
      total_compressed_size: BigInt(writer.offset - chunkStart),
      total_uncompressed_size: BigInt(uncompressedBytes),
      data_page_offset: BigInt(chunkStart),
    },
  };
  return { chunk, offsetIndex: { page_locations }, uncompressedBytes };
}
