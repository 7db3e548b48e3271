import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import type { ColumnBatch } from './column-batches.js';
import type { ColumnSpec, ColumnType, DatasetSpec } from './landing-schema.js';

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

/** The writer's options for a column of the given shape (see `TextShape` in landing-schema.ts). */
function columnSource(spec: ColumnSpec, values: ColumnBatch['columns'][number]): ColumnSource {
  const source: ColumnSource = { name: spec.name, data: values as ColumnSource['data'] };
  switch (spec.shape) {
    case 'id':
      return { ...source, encoding: 'PLAIN', statistics: false, codec: 'UNCOMPRESSED' };
    case 'distinct':
      return { ...source, encoding: 'PLAIN', statistics: false };
    case 'long':
      return { ...source, statistics: false };
    default:
      return source;
  }
}

export interface ParquetFile {
  bytes: Uint8Array;
  rows: number;
}

/**
 * Encodes row batches into one Parquet file (SNAPPY except random ids, one row group per batch). Only one batch of
 * column values is alive at a time; the output grows by compressed row groups.
 */
export function writeParquet(spec: DatasetSpec, batches: Iterable<ColumnBatch>): ParquetFile {
  const writer = new ByteWriter();
  const parquet = new ParquetWriter({ writer, schema: parquetSchema(spec), codec: 'SNAPPY', createdBy: 'trace-ingest landing' });
  let rows = 0;
  for (const batch of batches) {
    if (batch.rows === 0) continue;
    const columnData = spec.columns.map((column, i) => columnSource(column, batch.columns[i]!));
    void parquet.write({ columnData, rowGroupSize: batch.rows });
    rows += batch.rows;
  }
  void parquet.finish();
  return { bytes: writer.getBytes(), rows };
}
