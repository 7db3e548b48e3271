import { type LandableTrace, type LandedColumn, type LandedDataset, SPANS, type SpanRowSource, TRACES, type TraceRowSource } from './registry.js';

/** The values of one column for a run of rows, typed for the Parquet writer. */
export type ColumnValues = string[] | (string | null)[] | Int32Array | BigInt64Array | Float64Array | string[][];

/** A run of rows of one dataset, column by column in the dataset's column order. */
export interface ColumnBatch {
  rows: number;
  columns: ColumnValues[];
}

/** Rows per row group: large enough for Athena's scans, small enough to keep the encoder's memory flat. */
export const DEFAULT_ROWS_PER_BATCH = 10_000;

/** The sources of a run of rows: row `r` is taken from `traces[r]` (and, for a span row, its span `spanIndexes[r]`). */
interface RowSources {
  rows: number;
  traces: LandableTrace[];
  spanIndexes: Int32Array;
}

// One loop per column type, the column's accessor called row after row: each column is filled by a
// tight loop into an array of its final type, with no per-row object.
function columnValues(column: LandedColumn<SpanRowSource>, { rows, traces, spanIndexes }: RowSources): ColumnValues {
  switch (column.type) {
    case 'string':
    case 'nullable_string':
    case 'string_list': {
      const pick = column.value;
      const values = new Array<ReturnType<typeof pick>>(rows);
      for (let r = 0; r < rows; r++) values[r] = pick(traces[r]!, spanIndexes[r]!);
      return values as ColumnValues;
    }
    case 'int32': {
      const values = new Int32Array(rows);
      for (let r = 0; r < rows; r++) values[r] = column.value(traces[r]!, spanIndexes[r]!);
      return values;
    }
    case 'double': {
      const values = new Float64Array(rows);
      for (let r = 0; r < rows; r++) values[r] = column.value(traces[r]!, spanIndexes[r]!);
      return values;
    }
    case 'int64': {
      // A safe integer stored as its two 32-bit halves, low first (little-endian, as number-chunks.ts requires):
      // a BigInt per value would be allocated only to be copied into the array.
      const values = new BigInt64Array(rows);
      const halves = new Int32Array(values.buffer);
      for (let r = 0; r < rows; r++) {
        const value = column.value(traces[r]!, spanIndexes[r]!);
        const high = Math.floor(value / 2 ** 32);
        halves[2 * r] = value - high * 2 ** 32;
        halves[2 * r + 1] = high;
      }
      return values;
    }
    case 'timestamp': {
      const values = new BigInt64Array(rows);
      for (let r = 0; r < rows; r++) values[r] = column.value(traces[r]!, spanIndexes[r]!);
      return values;
    }
  }
}

/** A batch of `dataset`'s rows, every column built from the registry's accessors. */
function columnBatch(dataset: LandedDataset<SpanRowSource>, sources: RowSources): ColumnBatch {
  return { rows: sources.rows, columns: dataset.columns.map((column) => columnValues(column, sources)) };
}

/** Trace rows of `dataset` (by default `traces`) in batches of at most `rowsPerBatch`, in the order of `traces`. */
export function* traceBatches(
  traces: readonly LandableTrace[],
  rowsPerBatch = DEFAULT_ROWS_PER_BATCH,
  dataset: LandedDataset<TraceRowSource> = TRACES,
): Generator<ColumnBatch> {
  const noSpan = new Int32Array(Math.min(rowsPerBatch, traces.length));
  for (let start = 0; start < traces.length; start += rowsPerBatch) {
    const chunk = traces.slice(start, start + rowsPerBatch);
    yield columnBatch(dataset, { rows: chunk.length, traces: chunk, spanIndexes: noSpan });
  }
}

/**
 * Span rows of `dataset` (by default `spans`) in batches of at most `rowsPerBatch`: traces in order,
 * each trace's spans in order.
 */
export function* spanBatches(
  traces: readonly LandableTrace[],
  rowsPerBatch = DEFAULT_ROWS_PER_BATCH,
  dataset: LandedDataset<SpanRowSource> = SPANS,
): Generator<ColumnBatch> {
  let sources: RowSources = { rows: 0, traces: [], spanIndexes: new Int32Array(rowsPerBatch) };
  for (const t of traces) {
    for (let index = 0; index < t.trace.spans.length; index++) {
      sources.traces.push(t);
      sources.spanIndexes[sources.rows++] = index;
      if (sources.rows === rowsPerBatch) {
        yield columnBatch(dataset, sources);
        sources = { rows: 0, traces: [], spanIndexes: new Int32Array(rowsPerBatch) };
      }
    }
  }
  if (sources.rows > 0) yield columnBatch(dataset, sources);
}
