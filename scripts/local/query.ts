import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
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

/** Runs SQL against the landed data of the local stack (or `data`). */
export async function queryLanded(sql: string, data: LandedData = localLandedData()): Promise<QueryResult> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    await connection.run("SET TimeZone = 'UTC'");
    await createDatasetViews(connection, data);
    const reader = await connection.runAndReadAll(sql);
    return { columns: reader.columnNames(), rows: reader.getRowObjectsJson() };
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
  const { values, positionals } = parseArgs({ options: { json: { type: 'boolean', default: false } }, allowPositionals: true, strict: true });
  const sql = positionals.join(' ').trim();
  if (sql === '') {
    process.stderr.write('usage: npm run query -- [--json] "<SQL over the views traces and spans>"\n');
    process.exitCode = 2;
    return;
  }
  const result = await queryLanded(sql);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(result.rows)}\n`);
  } else {
    process.stdout.write(`${formatTable(result)}\n`);
  }
}

if (process.argv[1] && path.basename(process.argv[1]).startsWith('query')) {
  main().catch((error: unknown) => {
    process.stderr.write(`query: ${((error as Error).message ?? String(error)).split('\n')[0]}\n`);
    process.exitCode = 1;
  });
}
