import { ByteWriter, DrainingByteWriter, ParquetWriter } from './hyparquet-writer-adapter.js';
import type { ColumnBatch, ColumnValues } from './column-batches.js';
import type { ColumnSpec, ColumnType, DatasetSpec } from './landing-schema.js';
import { type ParquetCodec, parquetCodec } from './parquet-codec.js';
import { type NumberValues, writeNumberChunk } from './number-chunks.js';
import { type ChunkTarget, type PageScratch, type WrittenChunk, writeDictionaryTextChunk, writePlainTextChunk } from './text-chunks.js';

type SchemaElement = ConstructorParameters<typeof ParquetWriter>[0]['schema'][number];
type ColumnSource = Parameters<ParquetWriter['write']>[0]['columnData'][number];

const UTF8 = { type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } } as const;

function schemaElements({ name, type }: ColumnSpec): SchemaElement[] {
  const elements: Record<ColumnType, SchemaElement[]> = {
    string: [{ name, ...UTF8, repetition_type: 'REQUIRED' }],
    nullable_string: [{ name, ...UTF8, repetition_type: 'OPTIONAL' }],
    int32: [{ name, type: 'INT32', repetition_type: 'REQUIRED' }],
    int64: [{ name, type: 'INT64', repetition_type: 'REQUIRED' }],
    double: [{ name, type: 'DOUBLE', repetition_type: 'REQUIRED' }],
    timestamp: [
      {
        name,
        type: 'INT64',
        converted_type: 'TIMESTAMP_MICROS',
        logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' },
        repetition_type: 'REQUIRED',
      },
    ],
    // The three-level LIST layout of the Parquet spec, which Athena, Spark and DuckDB all read.
    string_list: [
      { name, repetition_type: 'REQUIRED', converted_type: 'LIST', logical_type: { type: 'LIST' }, num_children: 1 },
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      { name: 'element', ...UTF8, repetition_type: 'REQUIRED' },
    ],
  };
  return elements[type];
}

/** The Parquet schema of a dataset, root first. */
export function parquetSchema(spec: DatasetSpec): SchemaElement[] {
  return [{ name: 'schema', num_children: spec.columns.length }, ...spec.columns.flatMap(schemaElements)];
}

type ChunkWriter = (target: ChunkTarget, name: string, values: ColumnValues, nullable: boolean) => WrittenChunk;

const writeNumbers: ChunkWriter = (target, name, values) => writeNumberChunk(target, name, values as NumberValues);
const writePlainText: ChunkWriter = (target, name, values, nullable) => writePlainTextChunk(target, name, values as (string | null)[], nullable);
const writeDictionaryText: ChunkWriter = (target, name, values, nullable) => writeDictionaryTextChunk(target, name, values as (string | null)[], nullable);

/**
 * The columns written by number-chunks.ts and text-chunks.ts rather than by hyparquet-writer: numbers PLAIN
 * from their typed arrays, `id` and `distinct` text PLAIN, the plain string columns (few distinct values) as a
 * dictionary. `long` text, where a dictionary pays only sometimes, and the lists stay with hyparquet-writer.
 */
function ownWriter(spec: ColumnSpec): ChunkWriter | undefined {
  switch (spec.type) {
    case 'int32':
    case 'int64':
    case 'double':
    case 'timestamp':
      return writeNumbers;
    case 'string':
    case 'nullable_string':
      if (spec.shape === 'id' || spec.shape === 'distinct') return writePlainText;
      return spec.shape === undefined ? writeDictionaryText : undefined;
    default:
      return undefined;
  }
}

/** hyparquet-writer's options for a column of the given shape (see `TextShape` in landing-schema.ts). */
function columnSource(spec: ColumnSpec, values: ColumnValues): ColumnSource {
  const source: ColumnSource = { name: spec.name, data: values as ColumnSource['data'] };
  return spec.shape === 'long' ? { ...source, statistics: false } : source;
}

/** One file being written: its writer, and per column the chunk writer and target of our own columns. */
interface FileWriting {
  parquet: ParquetWriter;
  spec: DatasetSpec;
  /** By column index: our own chunk writer and where it writes, or undefined for hyparquet-writer's columns. */
  own: ({ write: ChunkWriter; target: ChunkTarget } | undefined)[];
}

function fileWriting(parquet: ParquetWriter, spec: DatasetSpec, codec: ParquetCodec): FileWriting {
  const scratch: PageScratch = { buffer: Buffer.alloc(0) };
  const compressed: ChunkTarget = { writer: parquet.writer, scratch, codec: codec.codec, compress: codec.compress };
  const uncompressed: ChunkTarget = { writer: parquet.writer, scratch, codec: 'UNCOMPRESSED', compress: undefined };
  const own = spec.columns.map((column) => {
    const write = ownWriter(column);
    return write && { write, target: column.shape === 'id' ? uncompressed : compressed };
  });
  return { parquet, spec, own };
}

/**
 * Writes one batch as one row group: hyparquet-writer writes its columns in one `write`, the columns of
 * {@link ownWriter} are written around it, and their chunks are put back in schema order in the row group's metadata.
 */
function writeRowGroup({ parquet, spec, own }: FileWriting, batch: ColumnBatch): void {
  const groupStart = parquet.writer.offset;
  const firstOther = own.indexOf(undefined);
  const written = new Map<number, WrittenChunk>();
  const writeOwn = (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const column = own[i];
      if (!column) continue;
      const chunk = column.write(column.target, spec.columns[i]!.name, batch.columns[i]!, spec.columns[i]!.type === 'nullable_string');
      parquet.pendingIndexes.push(chunk);
      written.set(i, chunk);
    }
  };
  // Readers locate a row group by its first column's chunk (Spark assigns it to the split holding its
  // midpoint), so the first column's chunk must start the row group.
  writeOwn(0, firstOther < 0 ? spec.columns.length : firstOther);
  if (firstOther < 0) {
    parquet.row_groups.push({ columns: [], total_byte_size: 0n, num_rows: BigInt(batch.rows) });
    parquet.num_rows += BigInt(batch.rows);
  } else {
    const columnData = spec.columns.flatMap((column, i) => (own[i] ? [] : [columnSource(column, batch.columns[i]!)]));
    void parquet.write({ columnData, rowGroupSize: batch.rows });
    writeOwn(firstOther, spec.columns.length);
  }
  const group = parquet.row_groups.at(-1)!;
  const others = group.columns.values();
  group.columns = spec.columns.map((_, i) => written.get(i)?.chunk ?? others.next().value!);
  for (const chunk of written.values()) group.total_byte_size += BigInt(chunk.uncompressedBytes);
  group.total_compressed_size = BigInt(parquet.writer.offset - groupStart);
}

export interface ParquetFile {
  bytes: Uint8Array;
  rows: number;
}

const LANDING_CODEC = parquetCodec();

/**
 * Encodes row batches into one Parquet file (`codec`, see {@link parquetCodec}, except random ids, which are
 * stored uncompressed; one row group per batch). Only one batch of column values is alive at a time; the output
 * grows by compressed row groups.
 */
export function writeParquet(spec: DatasetSpec, batches: Iterable<ColumnBatch>, codec: ParquetCodec = LANDING_CODEC): ParquetFile {
  const writer = new ByteWriter();
  const compressors = { [codec.codec]: codec.compress };
  const parquet = new ParquetWriter({ writer, schema: parquetSchema(spec), codec: codec.codec, compressors, createdBy: 'trace-ingest landing' });
  const writing = fileWriting(parquet, spec, codec);
  let rows = 0;
  for (const batch of batches) {
    if (batch.rows === 0) continue;
    writeRowGroup(writing, batch);
    rows += batch.rows;
  }
  void parquet.finish();
  return { bytes: writer.getBytes(), rows };
}

/**
 * A Parquet file written row group by row group and taken out in pieces as it grows, so that it is never held
 * whole: {@link take} hands out the bytes written since the last take (the header, then whole row groups),
 * {@link finish} the rest and the footer. The pieces, concatenated in order, are the file. Same encodings as
 * {@link writeParquet}; the footer (the row groups' metadata) is the only thing that grows with the file.
 */
export class ParquetStreamWriter {
  private readonly writer = new DrainingByteWriter();
  private readonly writing: FileWriting;
  private finished = false;
  /** Rows written so far. */
  rows = 0;
  /** Row groups written so far. */
  rowGroups = 0;

  constructor(spec: DatasetSpec, codec: ParquetCodec = LANDING_CODEC, createdBy = 'trace-ingest compaction') {
    const compressors = { [codec.codec]: codec.compress };
    const parquet = new ParquetWriter({ writer: this.writer, schema: parquetSchema(spec), codec: codec.codec, compressors, createdBy });
    this.writing = fileWriting(parquet, spec, codec);
  }

  /** Writes one batch as one row group (an empty batch writes nothing). */
  write(batch: ColumnBatch): void {
    if (this.finished) throw new Error('ParquetStreamWriter: write after finish');
    if (batch.rows === 0) return;
    writeRowGroup(this.writing, batch);
    this.rows += batch.rows;
    this.rowGroups++;
  }

  /** Bytes written and not taken yet. */
  get buffered(): number {
    return this.writer.buffered;
  }

  /** The bytes written since the last take. */
  take(): Uint8Array {
    return this.writer.drain();
  }

  /** Writes the footer; returns the bytes not taken yet, footer included. Nothing may be written after. */
  finish(): Uint8Array {
    if (this.finished) throw new Error('ParquetStreamWriter: finished twice');
    this.finished = true;
    void this.writing.parquet.finish();
    return this.writer.drain();
  }
}
