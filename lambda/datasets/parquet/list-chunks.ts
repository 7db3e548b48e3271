import type { OffsetIndex } from 'hyparquet';
import { ByteWriter, writeRleBitPackedHybrid } from './hyparquet-writer-adapter.js';
import {
  type ChunkTarget,
  dataPageHeader,
  dictionaryIfItPays,
  dictionaryIndexData,
  plainValues,
  type WrittenChunk,
  writeDictionaryPage,
  writePage,
  writtenChunk,
} from './text-chunks.js';

/** A page is cut at the first row boundary past this many UTF-16 code units of elements (about 1 MiB, as text-chunks.ts). */
const PAGE_CHARS = 1 << 20;

/**
 * A required LIST of required strings in the three-level layout (`<name>.list.element`) as Dremel levels:
 * one level entry per element, and one for an empty list. Repetition level 0 starts a row, 1 continues its
 * list; definition level 1 is an element, 0 an empty list.
 */
interface ListLevels {
  elements: string[];
  repetition: Int32Array;
  definition: Int32Array;
  /** Level entry at which each row starts, and the entry count at index `rows`. */
  rowStarts: Int32Array;
  /** Element at which each row starts, and the element count at index `rows`. */
  elementStarts: Int32Array;
}

function listLevels(lists: readonly (readonly string[])[]): ListLevels {
  let entries = 0;
  for (const list of lists) entries += Math.max(list.length, 1);
  const levels: ListLevels = {
    elements: [],
    repetition: new Int32Array(entries),
    definition: new Int32Array(entries),
    rowStarts: new Int32Array(lists.length + 1),
    elementStarts: new Int32Array(lists.length + 1),
  };
  let entry = 0;
  lists.forEach((list, row) => {
    levels.rowStarts[row] = entry;
    levels.elementStarts[row] = levels.elements.length;
    if (list.length === 0) entry++; // repetition 0, definition 0: the typed arrays' initial values
    for (let i = 0; i < list.length; i++) {
      levels.repetition[entry] = i === 0 ? 0 : 1;
      levels.definition[entry++] = 1;
      levels.elements.push(list[i]!);
    }
  });
  levels.rowStarts[lists.length] = entries;
  levels.elementStarts[lists.length] = levels.elements.length;
  return levels;
}

/** Levels of bit width 1, RLE/bit-packed (unprefixed, as data page v2 stores them). */
function encodedLevels(levels: Int32Array): Uint8Array {
  const writer = new ByteWriter();
  writeRleBitPackedHybrid(writer, levels, 1);
  return writer.getBytes();
}

/** Row ranges `[start, end)` of the pages: cut at the first row boundary past {@link PAGE_CHARS} of elements. */
function pageRows(levels: ListLevels, rows: number): [number, number][] {
  const pages: [number, number][] = [];
  let start = 0;
  let chars = 0;
  for (let row = 0; row < rows; row++) {
    for (let e = levels.elementStarts[row]!; e < levels.elementStarts[row + 1]!; e++) chars += levels.elements[e]!.length;
    if (chars >= PAGE_CHARS || row === rows - 1) {
      pages.push([start, row + 1]);
      start = row + 1;
      chars = 0;
    }
  }
  return pages;
}

/**
 * Writes one `string_list` column chunk: a required LIST of required UTF-8 strings, the elements as a
 * dictionary when it pays (with min/max from the dictionary) else PLAIN, levels RLE/bit-packed, data pages v2
 * cut at row boundaries. The null count is the number of empty lists, as hyparquet-writer counts it.
 * `lists` must not be empty.
 */
export function writeStringListChunk(target: ChunkTarget, name: string, lists: readonly (readonly string[])[]): WrittenChunk {
  const { writer } = target;
  const chunkStart = writer.offset;
  const levels = listLevels(lists);
  const found = dictionaryIfItPays(levels.elements);
  const dictionaryPage = found && writeDictionaryPage(target, found.dictionary, true);
  let uncompressedBytes = dictionaryPage?.uncompressedBytes ?? 0;
  const encoding = found ? 'RLE_DICTIONARY' : 'PLAIN';

  const dataPageOffset = writer.offset;
  const page_locations: OffsetIndex['page_locations'] = [];
  for (const [startRow, endRow] of pageRows(levels, lists.length)) {
    const [firstEntry, endEntry] = [levels.rowStarts[startRow]!, levels.rowStarts[endRow]!];
    const [firstElement, endElement] = [levels.elementStarts[startRow]!, levels.elementStarts[endRow]!];
    const repetition = encodedLevels(levels.repetition.subarray(firstEntry, endEntry));
    const definition = encodedLevels(levels.definition.subarray(firstEntry, endEntry));
    const data = found
      ? dictionaryIndexData(found.indexes.subarray(firstElement, endElement), found.dictionary.length)
      : plainValues(levels.elements, firstElement, endElement, target.scratch);
    const header = dataPageHeader(target, {
      values: endEntry - firstEntry,
      nulls: endEntry - firstEntry - (endElement - firstElement),
      rows: endRow - startRow,
      encoding,
      repetitionLevelBytes: repetition.length,
      definitionLevelBytes: definition.length,
    });
    const pageStart = writer.offset;
    uncompressedBytes += writePage(target, header, concat(repetition, definition), data);
    page_locations.push({ offset: BigInt(pageStart), compressed_page_size: writer.offset - pageStart, first_row_index: BigInt(startRow) });
  }

  const entries = levels.repetition.length;
  const pages = page_locations.length;
  return writtenChunk(target, chunkStart, uncompressedBytes, page_locations, {
    type: 'BYTE_ARRAY',
    encodings: found ? ['PLAIN', 'RLE', 'RLE_DICTIONARY'] : ['RLE', 'PLAIN'],
    path_in_schema: [name, 'list', 'element'],
    num_values: BigInt(entries),
    ...(found ? { data_page_offset: BigInt(dataPageOffset), dictionary_page_offset: BigInt(chunkStart) } : {}),
    statistics: { ...dictionaryPage?.minMax, null_count: BigInt(entries - levels.elements.length) },
    encoding_stats: [
      ...(found ? [{ page_type: 'DICTIONARY_PAGE' as const, encoding: 'PLAIN' as const, count: 1 }] : []),
      { page_type: 'DATA_PAGE_V2', encoding, count: pages },
    ],
  });
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const both = new Uint8Array(a.length + b.length);
  both.set(a);
  both.set(b, a.length);
  return both;
}
