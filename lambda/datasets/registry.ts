/**
 * The two landed datasets, defined once: each column's name, type, encoding shape and how its value is
 * taken from a trace or span. Everything else derives from here: the Parquet schema and the row
 * builders (column-batches.ts, parquet-writer.ts), the Glue tables and Athena views (lib/), the DuckDB
 * types of `npm run query`, and the compaction writer's batches (lambda/lake/lifecycle/parquet-rows.ts).
 * `org_id`, `dt` and `hour` are not columns: they are Hive partition keys in the object path.
 */
import type { AcceptedTrace, TraceContext } from '../shared/domain/trace.js';

/** `timestamp` is INT64 TIMESTAMP(MICROS, UTC); `string_list` is a required LIST of required UTF-8. */
export type ColumnType = 'string' | 'nullable_string' | 'int32' | 'int64' | 'double' | 'timestamp' | 'string_list';

/**
 * How each column type is declared outside Parquet: the Glue/Athena (Hive) type of a table column, the
 * Trino type of an Athena view column (Athena reads Parquet timestamps at millisecond precision), and the
 * DuckDB type.
 */
export const COLUMN_TYPE_NAMES: Record<ColumnType, { hive: string; athenaView: string; duckdb: string }> = {
  string: { hive: 'string', athenaView: 'varchar', duckdb: 'VARCHAR' },
  nullable_string: { hive: 'string', athenaView: 'varchar', duckdb: 'VARCHAR' },
  int32: { hive: 'int', athenaView: 'integer', duckdb: 'INTEGER' },
  int64: { hive: 'bigint', athenaView: 'bigint', duckdb: 'BIGINT' },
  double: { hive: 'double', athenaView: 'double', duckdb: 'DOUBLE' },
  timestamp: { hive: 'timestamp', athenaView: 'timestamp(3)', duckdb: 'TIMESTAMP WITH TIME ZONE' },
  string_list: { hive: 'array<string>', athenaView: 'array(varchar)', duckdb: 'VARCHAR[]' },
};

/** Hive partition keys of every landed and compacted dataset, in path order (not columns of the files). */
export const PARTITION_KEYS = ['org_id', 'dt', 'hour'] as const;

/**
 * How a string column's values look, which decides how it is encoded (the logical type stays STRING):
 * - `id`: a random id per row (UUIDs): PLAIN, no min/max statistics, not compressed (compression
 *   saves little on random hex and costs the most encode time per byte; docs/landing.md).
 * - `distinct`: (nearly) every value differs, JSON bodies: PLAIN, no dictionary attempt, no
 *   min/max statistics.
 * - `long`: long values that may repeat (`attributes` is often `{}`): dictionary when it pays, no
 *   min/max statistics.
 * Min/max of such values prune nothing in a query and cost encode time (they are compared value by
 * value); the other columns keep their statistics and the file's codec (parquet-codec.ts).
 */
export type TextShape = 'id' | 'distinct' | 'long';

/** What the Parquet writer, the Glue tables and the readers need to know of a column. */
export interface ColumnSpec {
  name: string;
  type: ColumnType;
  shape?: TextShape;
}

export type DatasetName = 'traces' | 'spans';

/** A dataset as the writer and the readers see it: its columns, in file order. */
export interface DatasetSpec {
  name: DatasetName;
  columns: readonly ColumnSpec[];
}

/**
 * The value a column of each type takes in a row, as its accessor returns it: `int64` a safe integer
 * (the token counts), `timestamp` microseconds since the epoch.
 */
export interface ColumnValueTypes {
  string: string;
  nullable_string: string | null;
  int32: number;
  int64: number;
  double: number;
  timestamp: bigint;
  string_list: string[];
}

/**
 * An accepted trace checked and made ready for the row builders: timestamps parsed once, tags extracted. The
 * landing makes it (`toLandableTrace`, lambda/landing/landable-trace.ts); every accessor below reads it.
 */
export interface LandableTrace {
  context: TraceContext;
  trace: AcceptedTrace;
  /** UTC date of the trace timestamp, the `dt` partition. */
  dt: string;
  /** UTC hour (`00`–`23`) of the trace timestamp, the `hour` partition. */
  hour: string;
  timestampMicros: bigint;
  receivedAtMicros: bigint;
  tags: string[];
  spanTimestampMicros: bigint[];
  spanTags: string[][];
}

/** Where a row's values come from: a trace row from its trace, a span row from its trace and the span's index in it. */
export type TraceRowSource = [trace: LandableTrace];
export type SpanRowSource = [trace: LandableTrace, spanIndex: number];

/** A landed column: its spec and how its value is taken from a row's source, typed by the column's type. */
export type LandedColumn<Source extends unknown[]> = {
  [T in ColumnType]: ColumnSpec & { type: T; value: (...source: Source) => ColumnValueTypes[T] };
}[ColumnType];

/** A landed dataset: the columns the row builders fill (column-batches.ts) and the Parquet writer writes, in order. */
export interface LandedDataset<Source extends unknown[]> extends DatasetSpec {
  columns: readonly LandedColumn<Source>[];
}

const provenance: readonly LandedColumn<TraceRowSource>[] = [
  { name: 'api_key_id', type: 'string', value: (t) => t.context.api_key_id },
  { name: 'request_id', type: 'string', value: (t) => t.context.request_id },
  { name: 'received_at', type: 'timestamp', value: (t) => t.receivedAtMicros },
];

export const TRACES: LandedDataset<TraceRowSource> = {
  name: 'traces',
  columns: [
    { name: 'trace_id', type: 'string', shape: 'id', value: (t) => t.trace.trace_id },
    { name: 'timestamp', type: 'timestamp', value: (t) => t.timestampMicros },
    { name: 'environment', type: 'string', value: (t) => t.trace.environment },
    { name: 'workspace_slug', type: 'string', value: (t) => t.context.workspace_slug },
    { name: 'duration_ms', type: 'double', value: (t) => t.trace.duration_ms },
    { name: 'root_span_name', type: 'string', value: (t) => t.trace.root_span_name },
    { name: 'status', type: 'string', value: (t) => t.trace.status },
    { name: 'model', type: 'string', value: (t) => t.trace.model },
    { name: 'input_tokens', type: 'int64', value: (t) => t.trace.input_tokens },
    { name: 'output_tokens', type: 'int64', value: (t) => t.trace.output_tokens },
    { name: 'total_tokens', type: 'int64', value: (t) => t.trace.total_tokens },
    { name: 'attributes', type: 'string', shape: 'long', value: (t) => t.trace.attributes },
    { name: 'tags', type: 'string_list', value: (t) => t.tags },
    { name: 'session_id', type: 'string', value: (t) => t.trace.session_id },
    { name: 'agent_id', type: 'string', value: (t) => t.trace.agent_id },
    { name: 'agent_name', type: 'string', value: (t) => t.trace.agent_name },
    { name: 'user_id', type: 'string', value: (t) => t.trace.user_id },
    { name: 'span_count', type: 'int32', value: (t) => t.trace.spans.length },
    ...provenance,
  ],
};

export const SPANS: LandedDataset<SpanRowSource> = {
  name: 'spans',
  columns: [
    { name: 'trace_id', type: 'string', value: (t) => t.trace.trace_id },
    { name: 'span_index', type: 'int32', value: (_, i) => i },
    { name: 'span_id', type: 'string', shape: 'id', value: (t, i) => t.trace.spans[i]!.span_id },
    { name: 'parent_span_id', type: 'nullable_string', shape: 'id', value: (t, i) => t.trace.spans[i]!.parent_span_id },
    { name: 'timestamp', type: 'timestamp', value: (t, i) => t.spanTimestampMicros[i]! },
    { name: 'duration_ms', type: 'double', value: (t, i) => t.trace.spans[i]!.duration_ms },
    { name: 'name', type: 'string', value: (t, i) => t.trace.spans[i]!.name },
    { name: 'kind', type: 'string', value: (t, i) => t.trace.spans[i]!.kind },
    { name: 'status', type: 'string', value: (t, i) => t.trace.spans[i]!.status },
    { name: 'model', type: 'string', value: (t, i) => t.trace.spans[i]!.model },
    { name: 'input_tokens', type: 'int64', value: (t, i) => t.trace.spans[i]!.input_tokens },
    { name: 'output_tokens', type: 'int64', value: (t, i) => t.trace.spans[i]!.output_tokens },
    { name: 'total_tokens', type: 'int64', value: (t, i) => t.trace.spans[i]!.total_tokens },
    { name: 'input', type: 'string', shape: 'distinct', value: (t, i) => t.trace.spans[i]!.input },
    { name: 'output', type: 'string', shape: 'distinct', value: (t, i) => t.trace.spans[i]!.output },
    { name: 'attributes', type: 'string', shape: 'long', value: (t, i) => t.trace.spans[i]!.attributes },
    { name: 'tags', type: 'string_list', value: (t, i) => t.spanTags[i]! },
    { name: 'error_message', type: 'nullable_string', shape: 'long', value: (t, i) => t.trace.spans[i]!.error_message },
    { name: 'session_id', type: 'string', value: (t, i) => t.trace.spans[i]!.session_id },
    { name: 'agent_id', type: 'string', value: (t, i) => t.trace.spans[i]!.agent_id },
    { name: 'agent_name', type: 'string', value: (t, i) => t.trace.spans[i]!.agent_name },
    { name: 'user_id', type: 'string', value: (t, i) => t.trace.spans[i]!.user_id },
    { name: 'environment', type: 'string', value: (t) => t.trace.environment },
    { name: 'workspace_slug', type: 'string', value: (t) => t.context.workspace_slug },
    ...provenance,
  ],
};

export const DATASETS = [TRACES, SPANS] as const;
