import type { ColumnChunk, ColumnMetaData, CompressionCodec, OffsetIndex, PageHeader } from 'hyparquet';
import { ByteWriter, type Writer, writePageHeader, writeRleBitPackedHybrid } from './hyparquet-writer-adapter.js';

/**
 * Flat UTF-8 column chunks written the way hyparquet-writer writes them (data pages v2, its page size,
 * page layout and metadata) but without its per-value work: hyparquet-writer UTF-8-encodes every value into
 * its own `Uint8Array`, copies it again into the page and walks every value for min/max and the dictionary
 * decision. Here a page's values are encoded with `Buffer.write` into one reused buffer, and a dictionary
 * column's min/max are taken over its dictionary.
 */

/** Values per page are cut at this many UTF-16 code units, about hyparquet-writer's 1 MiB page size. */
const PAGE_CHARS = 1 << 20;

/** A reusable output buffer for one file's pages: growing it per page would churn external memory. */
export interface PageScratch {
  buffer: Buffer;
}

/** A written column chunk, with what the row group and the offset index need about it. */
export interface WrittenChunk {
  chunk: ColumnChunk;
  offsetIndex: OffsetIndex;
  uncompressedBytes: number;
}

/** Where a column chunk's pages are written and how they are compressed. */
export interface ChunkTarget {
  writer: Writer;
  scratch: PageScratch;
  codec: CompressionCodec;
  compress: ((bytes: Uint8Array) => Uint8Array) | undefined;
}

type Text = string | null;

function pushVarInt(bytes: number[], value: number): void {
  while (value > 0x7f) {
    bytes.push((value & 0x7f) | 0x80);
    value = Math.floor(value / 128);
  }
  bytes.push(value);
}

/** Definition levels (0 null, 1 present) as RLE runs of bit width 1, the hybrid encoding data page v2 stores unprefixed. */
function definitionLevels(values: readonly Text[], start: number, end: number): Uint8Array {
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

/**
 * PLAIN values (4-byte little-endian length, UTF-8 bytes) of the non-null values in `[start, end)`, in the
 * scratch buffer; `offsets` (when given) receives where each value's bytes start.
 */
export function plainValues(values: readonly Text[], start: number, end: number, scratch: PageScratch, offsets?: Int32Array): Buffer {
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
    if (offsets) offsets[i] = offset + 4;
    offset += 4 + length;
  }
  return buffer.subarray(0, offset);
}

/** Writes one page (header, then uncompressed levels, then the compressed data); returns its uncompressed size. */
export function writePage(target: ChunkTarget, header: (dataBytes: number, storedBytes: number) => PageHeader, levels: Uint8Array, data: Uint8Array): number {
  const { writer } = target;
  const stored = target.compress ? target.compress(data) : data;
  const headerStart = writer.offset;
  writePageHeader(writer, header(data.length, stored.length));
  const headerBytes = writer.offset - headerStart;
  writer.appendBytes(levels);
  writer.appendBytes(stored);
  return headerBytes + levels.length + data.length;
}

/** What a data page v2 holds besides its data: level entries (`values`), how many are null, its rows and its levels' byte lengths. */
interface DataPageShape {
  values: number;
  nulls: number;
  rows: number;
  encoding: 'PLAIN' | 'RLE_DICTIONARY';
  repetitionLevelBytes?: number;
  definitionLevelBytes: number;
}

/** The header of a data page v2, levels (repetition, then definition) uncompressed before the data. */
export function dataPageHeader(target: ChunkTarget, page: DataPageShape) {
  const levelBytes = (page.repetitionLevelBytes ?? 0) + page.definitionLevelBytes;
  return (dataBytes: number, storedBytes: number): PageHeader => ({
    type: 'DATA_PAGE_V2',
    uncompressed_page_size: levelBytes + dataBytes,
    compressed_page_size: levelBytes + storedBytes,
    data_page_header_v2: {
      num_values: page.values,
      num_nulls: page.nulls,
      num_rows: page.rows,
      encoding: page.encoding,
      definition_levels_byte_length: page.definitionLevelBytes,
      repetition_levels_byte_length: page.repetitionLevelBytes ?? 0,
      is_compressed: target.compress !== undefined,
    },
  });
}

/** A flat page's header: every level entry is a row. */
function flatPageHeader(target: ChunkTarget, rows: number, nulls: number, encoding: DataPageShape['encoding'], levels: Uint8Array) {
  return dataPageHeader(target, { values: rows, nulls, rows, encoding, definitionLevelBytes: levels.length });
}

/** What a chunk writer says of its chunk; the rest of the metadata follows from where the chunk was written. */
export type ChunkFacts = Omit<ColumnMetaData, 'codec' | 'total_compressed_size' | 'total_uncompressed_size' | 'data_page_offset'> &
  Partial<Pick<ColumnMetaData, 'data_page_offset'>>;

/** The chunk written from `chunkStart` up to the writer's offset: its metadata (data pages from `chunkStart` unless said) and offset index. */
export function writtenChunk(
  target: ChunkTarget,
  chunkStart: number,
  uncompressedBytes: number,
  page_locations: OffsetIndex['page_locations'],
  facts: ChunkFacts,
): WrittenChunk {
  const meta_data: ColumnMetaData = {
    codec: target.codec,
    total_compressed_size: BigInt(target.writer.offset - chunkStart),
    total_uncompressed_size: BigInt(uncompressedBytes),
    data_page_offset: BigInt(chunkStart),
    ...facts,
  };
  return { chunk: { file_offset: BigInt(chunkStart), meta_data }, offsetIndex: { page_locations }, uncompressedBytes };
}

function countNulls(values: readonly Text[], start: number, end: number): number {
  let nulls = 0;
  for (let i = start; i < end; i++) if (values[i] === null) nulls++;
  return nulls;
}

/**
 * Writes one flat UTF-8 column chunk, PLAIN-encoded, no statistics (the `id` and `distinct` shapes).
 * `values` holds strings, or nulls when `nullable`.
 */
export function writePlainTextChunk(target: ChunkTarget, name: string, values: readonly Text[], nullable: boolean): WrittenChunk {
  const { writer } = target;
  const chunkStart = writer.offset;
  const page_locations: OffsetIndex['page_locations'] = [];
  let uncompressedBytes = 0;
  for (let start = 0; start < values.length; ) {
    let end = start;
    let chars = 0;
    while (end < values.length && (end === start || chars < PAGE_CHARS)) chars += values[end++]?.length ?? 0;
    const pageStart = writer.offset;
    const levels = nullable ? definitionLevels(values, start, end) : new Uint8Array(0);
    const header = flatPageHeader(target, end - start, nullable ? countNulls(values, start, end) : 0, 'PLAIN', levels);
    uncompressedBytes += writePage(target, header, levels, plainValues(values, start, end, target.scratch));
    page_locations.push({ offset: BigInt(pageStart), compressed_page_size: writer.offset - pageStart, first_row_index: BigInt(start) });
    start = end;
  }
  return writtenChunk(target, chunkStart, uncompressedBytes, page_locations, {
    type: 'BYTE_ARRAY',
    encodings: nullable ? ['PLAIN', 'RLE'] : ['PLAIN'],
    path_in_schema: [name],
    num_values: BigInt(values.length),
  });
}

/** A column's dictionary: the distinct non-null values in first-seen order and each value's index into them (-1 for null). */
interface Dictionary {
  dictionary: string[];
  indexes: Int32Array;
}

/**
 * The dictionary of `values`, or undefined as soon as its values pass `maxChars` UTF-16 code units (a
 * dictionary that large cannot pay). Consecutive rows often repeat a value (a trace's spans share its
 * context, its session, its agent): the previous row's index is reused without a lookup.
 */
function dictionaryOf(values: readonly Text[], maxChars = Infinity): Dictionary | undefined {
  const positions = new Map<string, number>();
  const dictionary: string[] = [];
  const indexes = new Int32Array(values.length);
  let previous: Text | undefined;
  let previousIndex = -1;
  let chars = 0;
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value === previous) {
      indexes[i] = previousIndex;
      continue;
    }
    let index = -1;
    if (value !== null && value !== undefined) {
      const known = positions.get(value);
      if (known === undefined) {
        chars += value.length;
        if (chars > maxChars) return undefined;
        index = dictionary.length;
        dictionary.push(value);
        positions.set(value, index);
      } else {
        index = known;
      }
    }
    indexes[i] = index;
    previous = value;
    previousIndex = index;
  }
  return { dictionary, indexes };
}

/**
 * The dictionary of `values` when it pays, the rule hyparquet-writer applies: the dictionary's values and the
 * bit-packed indexes take at most half the PLAIN bytes (lengths measured in UTF-16 code units, an estimate of
 * the UTF-8 bytes, with the 4-byte length prefix of each PLAIN value).
 */
export function dictionaryIfItPays(values: readonly Text[]): Dictionary | undefined {
  let present = 0;
  let plainBytes = 0;
  for (const value of values) {
    if (value === null || value === undefined) continue;
    present++;
    plainBytes += 4 + value.length;
  }
  // No value at all (every row null, every list empty): PLAIN, as hyparquet-writer writes it. A dictionary of
  // no entries is legal Parquet, but it is what readers test least (Trino has had bugs with exactly that).
  if (present === 0) return undefined;
  const found = dictionaryOf(values, plainBytes / 2);
  if (!found) return undefined;
  const dictionaryBytes = found.dictionary.reduce((bytes, value) => bytes + 4 + value.length, 0);
  const indexBytes = Math.ceil((present * bitWidthOf(found.dictionary.length)) / 8);
  return 2 * (dictionaryBytes + indexBytes) <= plainBytes ? found : undefined;
}

/** Bits per dictionary index. */
function bitWidthOf(dictionarySize: number): number {
  return Math.ceil(Math.log2(Math.max(dictionarySize, 1)));
}

/**
 * Indexes of the smallest and largest dictionary values in UTF-8 byte order (which is code point order, the
 * order Parquet's min/max of strings use), compared in the dictionary page's encoded bytes.
 */
function minMaxOf(page: Buffer, starts: Int32Array): { min: number; max: number } {
  const end = (i: number) => starts[i]! + page.readUInt32LE(starts[i]! - 4);
  // Buffer#compare compares `page` in [sourceStart, sourceEnd) (here a) with the target range (here b).
  const compare = (a: number, b: number) => page.compare(page, starts[b]!, end(b), starts[a]!, end(a));
  let min = 0;
  let max = 0;
  for (let i = 1; i < starts.length; i++) {
    if (compare(i, min) < 0) min = i;
    if (compare(i, max) > 0) max = i;
  }
  return { min, max };
}

/**
 * Writes a dictionary page of `dictionary` (PLAIN); returns its uncompressed size and, when asked, the
 * dictionary's smallest and largest values for the chunk's statistics.
 */
export function writeDictionaryPage(
  target: ChunkTarget,
  dictionary: readonly string[],
  withMinMax: boolean,
): { uncompressedBytes: number; minMax?: { min_value: string | undefined; max_value: string | undefined } } {
  const offsets = new Int32Array(dictionary.length);
  const page = plainValues(dictionary, 0, dictionary.length, target.scratch, offsets);
  const bounds = withMinMax ? minMaxOf(page, offsets) : undefined;
  const uncompressedBytes = writePage(
    target,
    (dataBytes, storedBytes) => ({
      type: 'DICTIONARY_PAGE',
      uncompressed_page_size: dataBytes,
      compressed_page_size: storedBytes,
      dictionary_page_header: { num_values: dictionary.length, encoding: 'PLAIN' },
    }),
    new Uint8Array(0),
    page,
  );
  return { uncompressedBytes, minMax: bounds && { min_value: dictionary[bounds.min], max_value: dictionary[bounds.max] } };
}

/** RLE_DICTIONARY page data: the indexes' bit width, then the indexes RLE/bit-packed. */
export function dictionaryIndexData(indexes: Int32Array, dictionarySize: number): Uint8Array {
  const bitWidth = bitWidthOf(dictionarySize);
  const data = new ByteWriter();
  data.appendUint8(bitWidth);
  writeRleBitPackedHybrid(data, indexes, bitWidth);
  return data.getBytes();
}

/**
 * Writes one flat UTF-8 column chunk dictionary-encoded (a PLAIN dictionary page, then one RLE_DICTIONARY data
 * page), with a null count and, when `statistics`, min/max: the columns of few distinct values. `values` holds
 * strings, or nulls when `nullable`; `dictionary` is theirs (by default built here, whatever its size).
 */
export function writeDictionaryTextChunk(
  target: ChunkTarget,
  name: string,
  values: readonly Text[],
  nullable: boolean,
  { dictionary: found = dictionaryOf(values)!, statistics = true }: { dictionary?: Dictionary; statistics?: boolean } = {},
): WrittenChunk {
  const { writer } = target;
  const chunkStart = writer.offset;
  const { dictionary, indexes } = found;
  const dictionaryPage = writeDictionaryPage(target, dictionary, statistics);

  const dataPageOffset = writer.offset;
  const nulls = nullable ? countNulls(values, 0, values.length) : 0;
  const presentIndexes = nulls > 0 ? indexes.filter((index) => index >= 0) : indexes;
  const levels = nullable ? definitionLevels(values, 0, values.length) : new Uint8Array(0);
  const data = dictionaryIndexData(presentIndexes, dictionary.length);
  const uncompressedBytes = dictionaryPage.uncompressedBytes + writePage(target, flatPageHeader(target, values.length, nulls, 'RLE_DICTIONARY', levels), levels, data);

  const page_locations = [{ offset: BigInt(dataPageOffset), compressed_page_size: writer.offset - dataPageOffset, first_row_index: 0n }];
  return writtenChunk(target, chunkStart, uncompressedBytes, page_locations, {
    type: 'BYTE_ARRAY',
    encodings: nullable ? ['PLAIN', 'RLE', 'RLE_DICTIONARY'] : ['PLAIN', 'RLE_DICTIONARY'],
    path_in_schema: [name],
    num_values: BigInt(values.length),
    data_page_offset: BigInt(dataPageOffset),
    dictionary_page_offset: BigInt(chunkStart),
    statistics: { ...dictionaryPage.minMax, null_count: BigInt(nulls) },
    encoding_stats: [
      { page_type: 'DICTIONARY_PAGE', encoding: 'PLAIN', count: 1 },
      { page_type: 'DATA_PAGE_V2', encoding: 'RLE_DICTIONARY', count: 1 },
    ],
  });
}

/**
 * Writes one flat UTF-8 column chunk of long values that may repeat (the `long` shape): as a dictionary
 * when it pays ({@link dictionaryIfItPays}), else PLAIN; no min/max (they would prune nothing).
 */
export function writeLongTextChunk(target: ChunkTarget, name: string, values: readonly Text[], nullable: boolean): WrittenChunk {
  const dictionary = dictionaryIfItPays(values);
  return dictionary ? writeDictionaryTextChunk(target, name, values, nullable, { dictionary, statistics: false }) : writePlainTextChunk(target, name, values, nullable);
}
