import { DrainingByteWriter, ParquetWriter } from './hyparquet-writer-adapter.js';
import type { ColumnBatch, ColumnValues } from '../column-batches.js';
import type { ColumnSpec, ColumnType, DatasetSpec } from '../registry.js';
import { type ParquetCodec, parquetCodec } from './parquet-codec.js';
import { type NumberValues, writeNumberChunk } from './number-chunks.js';
import { writeStringListChunk } from './list-chunks.js';
import { type ChunkTarget, type PageScratch, type WrittenChunk, writeDictionaryTextChunk, writeLongTextChunk, writePlainTextChunk } from './text-chunks.js';

type SchemaElement = ConstructorParameters<typeof ParquetWriter>[0]['schema'][number];

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
const writeLongText: ChunkWriter = (target, name, values, nullable) => writeLongTextChunk(target, name, values as (string | null)[], nullable);
const writeStringList: ChunkWriter = (target, name, values) => writeStringListChunk(target, name, values as string[][]);

/**
 * How each column's chunk is written (number-chunks.ts, text-chunks.ts, list-chunks.ts): numbers PLAIN from
 * their typed arrays; `id` and `distinct` text PLAIN; `long` text as a dictionary when it pays; the plain
 * string columns (few distinct values) as a dictionary; lists with their levels, elements as a dictionary when it pays.
 */
function chunkWriter(spec: ColumnSpec): ChunkWriter {
  switch (spec.type) {
    case 'int32':
    case 'int64':
    case 'double':
    case 'timestamp':
      return writeNumbers;
    case 'string_list':
      return writeStringList;
    case 'string':
    case 'nullable_string':
      if (spec.shape === 'id' || spec.shape === 'distinct') return writePlainText;
      return spec.shape === 'long' ? writeLongText : writeDictionaryText;
  }
}

/** One file being written: its writer, and per column the chunk writer and where it writes. */
interface FileWriting {
  parquet: ParquetWriter;
  spec: DatasetSpec;
  columns: { write: ChunkWriter; target: ChunkTarget; nullable: boolean }[];
}

function fileWriting(parquet: ParquetWriter, spec: DatasetSpec, codec: ParquetCodec): FileWriting {
  const scratch: PageScratch = { buffer: Buffer.alloc(0) };
  const compressed: ChunkTarget = { writer: parquet.writer, scratch, codec: codec.codec, compress: codec.compress };
  const uncompressed: ChunkTarget = { writer: parquet.writer, scratch, codec: 'UNCOMPRESSED', compress: undefined };
  const columns = spec.columns.map((column) => ({
    write: chunkWriter(column),
    target: column.shape === 'id' ? uncompressed : compressed,
    nullable: column.type === 'nullable_string',
  }));
  return { parquet, spec, columns };
}

/**
 * Writes one batch as one row group, its column chunks contiguous and in schema order. Readers locate a row
 * group by its first column's chunk (Spark assigns it to the split holding its midpoint), so that chunk
 * starts the row group. hyparquet-writer writes the file around them (magic, footer, offset indexes).
 */
function writeRowGroup({ parquet, spec, columns }: FileWriting, batch: ColumnBatch): void {
  const groupStart = parquet.writer.offset;
  const chunks = columns.map(({ write, target, nullable }, i) => write(target, spec.columns[i]!.name, batch.columns[i]!, nullable));
  parquet.pendingIndexes.push(...chunks);
  parquet.row_groups.push({
    columns: chunks.map((written) => written.chunk),
    total_byte_size: BigInt(chunks.reduce((bytes, written) => bytes + written.uncompressedBytes, 0)),
    total_compressed_size: BigInt(parquet.writer.offset - groupStart),
    num_rows: BigInt(batch.rows),
  });
  parquet.num_rows += BigInt(batch.rows);
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
export function writeParquet(spec: DatasetSpec, batches: Iterable<ColumnBatch>, codec: ParquetCodec = LANDING_CODEC, metadata?: Record<string, string>): ParquetFile {
  const file = new ParquetStreamWriter(spec, codec, 'trace-ingest landing', metadata);
  for (const batch of batches) file.write(batch);
  return { bytes: file.finish(), rows: file.rows };
}

/**
 * A Parquet file written row group by row group and taken out in pieces as it grows, so that it is never held
 * whole: {@link take} hands out the bytes written since the last take (the header, then whole row groups),
 * {@link finish} the rest and the footer. The pieces, concatenated in order, are the file ({@link writeParquet}
 * takes it in one piece); the footer (the row groups' metadata) is the only thing that grows with the file.
 */
export class ParquetStreamWriter {
  private readonly writer = new DrainingByteWriter();
  private readonly writing: FileWriting;
  private finished = false;
  /** Rows written so far. */
  rows = 0;
  /** Row groups written so far. */
  rowGroups = 0;

  /** `metadata`: key-value pairs for the footer (Parquet's `key_value_metadata`). */
  constructor(spec: DatasetSpec, codec: ParquetCodec = LANDING_CODEC, createdBy = 'trace-ingest compaction', metadata?: Record<string, string>) {
    const compressors = { [codec.codec]: codec.compress };
    const kvMetadata = metadata && Object.entries(metadata).map(([key, value]) => ({ key, value }));
    const parquet = new ParquetWriter({ writer: this.writer, schema: parquetSchema(spec), codec: codec.codec, compressors, createdBy, ...(kvMetadata ? { kvMetadata } : {}) });
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

  /** Writes the footer; returns the bytes not taken yet, footer included (not copied: nothing is written after). */
  finish(): Uint8Array {
    if (this.finished) throw new Error('ParquetStreamWriter: finished twice');
    this.finished = true;
    void this.writing.parquet.finish();
    return this.writer.getBytes();
  }
}
