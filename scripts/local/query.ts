import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  type DuckDBConnection,
  DuckDBInstance,
  DuckDBTypeId,
  type DuckDBValueConverter,
  JsonDuckDBValueConverter,
  type Json,
} from '@duckdb/node-api';
import { type ColumnType, DATASETS, type DatasetSpec } from '../../lambda/landing/landing-schema.js';
import { LOCAL_NAMES, localPaths } from './local-state.js';

/** s3rver keeps each object in a file named `<last key segment>._S3rver_object`. */
const S3RVER_OBJECT_SUFFIX = '._S3rver_object';

const DUCKDB_TYPES: Record<ColumnType, string> = {
  string: 'VARCHAR',
  nullable_string: 'VARCHAR',
  int32: 'INTEGER',
  int64: 'BIGINT',
  double: 'DOUBLE',
  timestamp: 'TIMESTAMP WITH TIME ZONE',
  string_list: 'VARCHAR[]',
};

/** Where the landed objects of the local stack are on disk. */
export interface LandedData {
  /** s3rver's directory (`<state dir>/s3`). */
  s3Directory: string;
  bucket: string;
}

export function localLandedData(): LandedData {
  return { s3Directory: localPaths().s3, bucket: LOCAL_NAMES.bucket };
}

function hasObjects(dir: string): boolean {
  if (!existsSync(dir)) return false;
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).some((name) => name.endsWith(`.parquet${S3RVER_OBJECT_SUFFIX}`));
}

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** The SELECT behind a dataset's view: its Parquet with `org_id` and `dt` from the Hive partitions, or no rows yet. */
export function datasetViewSql(dataset: DatasetSpec, data: LandedData): string {
  const dir = path.join(data.s3Directory, data.bucket, dataset.name);
  if (hasObjects(dir)) {
    const glob = path.join(dir, '**', `*.parquet${S3RVER_OBJECT_SUFFIX}`);
    return `SELECT * FROM read_parquet(${quote(glob)}, hive_partitioning = true, hive_types = {'org_id': VARCHAR, 'dt': DATE}, union_by_name = true)`;
  }
  const columns = dataset.columns.map((column) => `CAST(NULL AS ${DUCKDB_TYPES[column.type]}) AS "${column.name}"`);
  return `SELECT ${[...columns, 'CAST(NULL AS VARCHAR) AS org_id', 'CAST(NULL AS DATE) AS dt'].join(', ')} WHERE false`;
}

/** Creates the views `traces` and `spans` over the landed Parquet. */
export async function createDatasetViews(connection: DuckDBConnection, data: LandedData): Promise<void> {
  for (const dataset of DATASETS) {
    await connection.run(`CREATE OR REPLACE VIEW ${dataset.name} AS ${datasetViewSql(dataset, data)}`);
  }
}

export interface QueryResult {
  columns: string[];
  rows: Record<string, unknown>[];
}

export const QUERY_USAGE = `usage: npm run query -- [--json] "<SQL over the views traces and spans>"

Runs SQL with DuckDB over the Parquet that the local stack landed (state in .local/, or
TRACE_INGEST_LOCAL_DIR). The views are traces and spans; org_id and dt come from the object paths.
Several statements separated by ';' each print their result, in order.

  --json   one JSON array of row objects per statement, one per line: integers as numbers
           (as strings beyond 2^53), timestamps as ISO 8601 in UTC with microseconds
  --help   this text
`;

/** Microseconds since the epoch as ISO 8601 in UTC, keeping all six fraction digits. */
export function isoFromMicros(micros: bigint): string {
  const subMillis = ((micros % 1000n) + 1000n) % 1000n;
  const iso = new Date(Number((micros - subMillis) / 1000n)).toISOString();
  return `${iso.slice(0, -1)}${String(subMillis).padStart(3, '0')}Z`;
}

const INTEGER_TYPES = new Set([DuckDBTypeId.BIGINT, DuckDBTypeId.UBIGINT, DuckDBTypeId.HUGEINT, DuckDBTypeId.UHUGEINT]);

/** DuckDB's JSON conversion, but integers as numbers where exact and timestamps as ISO 8601. */
const clientJson: DuckDBValueConverter<Json> = (value, type, converter) => {
  if (INTEGER_TYPES.has(type.typeId)) {
    const integer = value as bigint;
    return integer >= BigInt(Number.MIN_SAFE_INTEGER) && integer <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(integer) : String(integer);
  }
  if (type.typeId === DuckDBTypeId.TIMESTAMP || type.typeId === DuckDBTypeId.TIMESTAMP_TZ) {
    return isoFromMicros((value as { micros: bigint }).micros);
  }
  return JsonDuckDBValueConverter(value, type, converter);
};

/** Runs SQL (one statement or several) against the landed data of the local stack (or `data`): one result per statement. */
export async function queryLanded(sql: string, data: LandedData = localLandedData()): Promise<QueryResult[]> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    await connection.run("SET TimeZone = 'UTC'");
    await createDatasetViews(connection, data);
    const statements = await connection.extractStatements(sql);
    const results: QueryResult[] = [];
    for (let index = 0; index < statements.count; index++) {
      const reader = await (await statements.prepare(index)).runAndReadAll();
      results.push({ columns: reader.columnNames(), rows: reader.convertRowObjects(clientJson) });
    }
    return results;
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A plain text table, one line per row. */
export function formatTable({ columns, rows }: QueryResult, maxWidth = 60): string {
  const clip = (text: string) => (text.length > maxWidth ? `${text.slice(0, maxWidth - 1)}…` : text);
  const cells = rows.map((row) => columns.map((column) => clip(cell(row[column]).replace(/\s+/g, ' '))));
  const widths = columns.map((column, i) => Math.max(column.length, ...cells.map((line) => line[i]?.length ?? 0)));
  const line = (values: string[]) => values.map((value, i) => value.padEnd(widths[i] ?? 0)).join(' | ').trimEnd();
  return [line(columns), widths.map((width) => '-'.repeat(width)).join('-+-'), ...cells.map(line), `(${rows.length} row${rows.length === 1 ? '' : 's'})`].join('\n');
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    options: { json: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h', default: false } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    process.stdout.write(QUERY_USAGE);
    return;
  }
  const sql = positionals.join(' ').trim();
  if (sql === '') {
    process.stderr.write(QUERY_USAGE);
    process.exitCode = 2;
    return;
  }
  const results = await queryLanded(sql);
  const printed = results.map((result) => (values.json ? JSON.stringify(result.rows) : formatTable(result)));
  process.stdout.write(`${printed.join(values.json ? '\n' : '\n\n')}\n`);
}

if (process.argv[1] && path.basename(process.argv[1]).startsWith('query')) {
  main().catch((error: unknown) => {
    process.stderr.write(`query: ${((error as Error).message ?? String(error)).split('\n')[0]}\n`);
    process.exitCode = 1;
  });
}
