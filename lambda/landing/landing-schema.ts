/**
 * The two landed datasets, defined once: the Parquet writer builds its schema from these columns and
 * the row builder fills them in this order. `org_id` and `dt` are not columns: they are Hive
 * partition keys in the object path.
 */

/** `timestamp` is INT64 TIMESTAMP(MICROS, UTC); `string_list` is a required LIST of required UTF-8. */
export type ColumnType = 'string' | 'nullable_string' | 'int32' | 'int64' | 'double' | 'timestamp' | 'string_list';

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

export type TextShape = 'id' | 'distinct' | 'long';

export interface ColumnSpec {
  name: string;
  type: ColumnType;
  shape?: TextShape;
}

export type DatasetName = 'traces' | 'spans';

export interface DatasetSpec {
  name: DatasetName;
  columns: readonly ColumnSpec[];
}

const provenance: readonly ColumnSpec[] = [
  { name: 'api_key_id', type: 'string' },
  { name: 'request_id', type: 'string' },
  { name: 'received_at', type: 'timestamp' },
];

export const TRACES: DatasetSpec = {
  name: 'traces',
  columns: [
    { name: 'trace_id', type: 'string', shape: 'id' },
    { name: 'timestamp', type: 'timestamp' },
    { name: 'environment', type: 'string' },
    { name: 'workspace_slug', type: 'string' },
    { name: 'duration_ms', type: 'double' },
    { name: 'root_span_name', type: 'string' },
    { name: 'status', type: 'string' },
    { name: 'model', type: 'string' },
    { name: 'input_tokens', type: 'int64' },
    { name: 'output_tokens', type: 'int64' },
    { name: 'total_tokens', type: 'int64' },
    { name: 'attributes', type: 'string', shape: 'long' },
    { name: 'tags', type: 'string_list' },
    { name: 'session_id', type: 'string' },
    { name: 'agent_id', type: 'string' },
    { name: 'agent_name', type: 'string' },
    { name: 'user_id', type: 'string' },
    { name: 'span_count', type: 'int32' },
    ...provenance,
  ],
};

export const SPANS: DatasetSpec = {
  name: 'spans',
  columns: [
    { name: 'trace_id', type: 'string' },
    { name: 'span_index', type: 'int32' },
    { name: 'span_id', type: 'string', shape: 'id' },
    { name: 'parent_span_id', type: 'nullable_string', shape: 'id' },
    { name: 'timestamp', type: 'timestamp' },
    { name: 'duration_ms', type: 'double' },
    { name: 'name', type: 'string' },
    { name: 'kind', type: 'string' },
    { name: 'status', type: 'string' },
    { name: 'model', type: 'string' },
    { name: 'input_tokens', type: 'int64' },
    { name: 'output_tokens', type: 'int64' },
    { name: 'total_tokens', type: 'int64' },
    { name: 'input', type: 'string', shape: 'distinct' },
    { name: 'output', type: 'string', shape: 'distinct' },
    { name: 'attributes', type: 'string', shape: 'long' },
    { name: 'tags', type: 'string_list' },
    { name: 'error_message', type: 'nullable_string', shape: 'long' },
    { name: 'session_id', type: 'string' },
    { name: 'agent_id', type: 'string' },
    { name: 'agent_name', type: 'string' },
    { name: 'user_id', type: 'string' },
    { name: 'environment', type: 'string' },
    { name: 'workspace_slug', type: 'string' },
    ...provenance,
  ],
};

export const DATASETS = [TRACES, SPANS] as const;
