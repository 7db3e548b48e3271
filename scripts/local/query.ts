import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import {
  type DuckDBConnection,
  DuckDBInstance,
  DuckDBTypeId,
  type DuckDBValueConverter,
  JsonDuckDBValueConverter,
  type Json,
} from '@duckdb/node-api';
import { MANIFEST_ROOT, sliceOfManifestKey } from '../../lambda/lake/keys/compacted-keys.js';
import { InvalidManifestError, type SliceManifest, parseManifest } from '../../lambda/lake/manifest.js';
import { exactlyOnceKeys } from '../../lambda/lake/read-plan.js';
import { type ErasureRequest, parseRequest } from '../../lambda/erasure/erasure-record.js';
import { ERASURE_ROOT } from '../../lambda/lake/keys/erasure-keys.js';
import { COLUMN_TYPE_NAMES, DATASETS, type DatasetSpec } from '../../lambda/datasets/registry.js';
import { LOCAL_NAMES, localPaths } from '../../devkit/local-stack/local-state.js';

/** s3rver keeps each object in a file named `<last key segment>._S3rver_object`. */
const S3RVER_OBJECT_SUFFIX = '._S3rver_object';

/** Where the landed objects of the local stack are on disk. */
export interface LandedData {
  /** s3rver's directory (`<state dir>/s3`). */
  s3Directory: string;
  bucket: string;
}

export function localLandedData(): LandedData {
  return { s3Directory: localPaths().s3, bucket: LOCAL_NAMES.bucket };
}

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** Keys of the objects under `prefix` whose keys end in `suffix`, from s3rver's directory (one file per object). */
function keysOnDisk(data: LandedData, prefix: string, suffix: string): string[] {
  const root = path.join(data.s3Directory, data.bucket);
  const dir = path.join(root, prefix);
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith(`${suffix}${S3RVER_OBJECT_SUFFIX}`))
    .map((name) => `${prefix}${name.split(path.sep).join('/').slice(0, -S3RVER_OBJECT_SUFFIX.length)}`)
    .sort();
}

const fileOf = (data: LandedData, key: string) => path.join(data.s3Directory, data.bucket, ...key.split('/')) + S3RVER_OBJECT_SUFFIX;

/** Every slice manifest of the bucket, each read once. */
function readManifests(data: LandedData): SliceManifest[] {
  return keysOnDisk(data, MANIFEST_ROOT, 'manifest.json').map((key) => {
    const slice = sliceOfManifestKey(key);
    if (!slice) throw new InvalidManifestError(`${key} is not where a slice's manifest is kept`);
    return parseManifest(readFileSync(fileOf(data, key)), slice);
  });
}

const EMPTY = (dataset: DatasetSpec) => {
  const columns = dataset.columns.map((column) => `CAST(NULL AS ${COLUMN_TYPE_NAMES[column.type].duckdb}) AS "${column.name}"`);
  return `SELECT ${[...columns, 'CAST(NULL AS VARCHAR) AS org_id', 'CAST(NULL AS DATE) AS dt', 'CAST(NULL AS VARCHAR) AS hour'].join(', ')} WHERE false`;
};

/**
 * `org_id`, `dt` and `hour` cut from an object's path as the text they are. Not DuckDB's Hive partitioning,
 * which reads `org_id=NULL` (any case) and `org_id=__HIVE_DEFAULT_PARTITION__` as SQL NULL: organizations
 * created with such ids before they were refused must stay reachable and apart.
 */
const PARTITION_PATH = "'/org_id=([^/]*)/dt=([^/]*)/hour=([^/]*)/[^/]*$'";
const PARTITIONS_FROM_PATH = [
  `regexp_extract(filename, ${PARTITION_PATH}, 1) AS org_id`,
  `CAST(regexp_extract(filename, ${PARTITION_PATH}, 2) AS DATE) AS dt`,
  `regexp_extract(filename, ${PARTITION_PATH}, 3) AS hour`,
].join(', ');

/** A SELECT over the given objects with `org_id`, `dt` and `hour` from their paths, or no rows. */
function selectObjects(dataset: DatasetSpec, data: LandedData, keys: readonly string[]): string {
  if (keys.length === 0) return EMPTY(dataset);
  const files = keys.map((key) => quote(fileOf(data, key))).join(', ');
  return `SELECT * EXCLUDE (filename), ${PARTITIONS_FROM_PATH} FROM read_parquet([${files}], hive_partitioning = false, filename = true, union_by_name = true)`;
}

/**
 * The SELECTs behind a dataset's two views: every row once (compacted where compacted, raw elsewhere), and raw as
 * landed. `manifests` must have been read before this lists the raw objects: a raw object landed after its slice's
 * manifest was read is then simply not covered by it and is shown from raw (see "What readers see" in docs/landing.md).
 */
export function datasetViewSql(dataset: DatasetSpec, data: LandedData, manifests: readonly SliceManifest[]): { exactlyOnce: string; raw: string } {
  const rawKeys = keysOnDisk(data, `${dataset.name}/`, '.parquet');
  return { exactlyOnce: selectObjects(dataset, data, exactlyOnceKeys(dataset.name, manifests, rawKeys)), raw: selectObjects(dataset, data, rawKeys) };
}

/** The erasure requests not done yet, read from the bucket on disk. */
function openErasureRequests(data: LandedData): ErasureRequest[] {
  return keysOnDisk(data, `${ERASURE_ROOT}requests/`, '.json')
    .map((key) => parseRequest(readFileSync(fileOf(data, key))))
    .filter((request) => request.status !== 'done');
}

/**
 * What an open request matches, as SQL over the rows `x` (organization, received no later than the request, and a
 * member of its selector): the same rule as lambda/erasure/erasure-record.ts and the Athena views.
 */
export function erasureMatchSql(requests: readonly ErasureRequest[]): string {
  const list = (values: readonly string[]) => (values.length === 0 ? '(NULL)' : `(${values.map(quote).join(', ')})`);
  return requests
    .map((request) => `(x.org_id = ${quote(request.org_id)} AND epoch_us(x.received_at) <= ${request.requested_at_micros} AND (x.user_id IN ${list(request.user_ids)} OR x.session_id IN ${list(request.session_ids)} OR x.trace_id IN ${list(request.trace_ids)}))`)
    .join(' OR ');
}

/**
 * Creates the views `traces` and `spans` (every row once) and `traces_raw` and `spans_raw` (as landed). While an
 * erasure request is open, all four leave out every row of the traces it names (a trace row or any span matching),
 * at once: the request object is read here, when the query starts.
 */
export async function createDatasetViews(connection: DuckDBConnection, data: LandedData): Promise<void> {
  const manifests = readManifests(data);
  const open = openErasureRequests(data);
  const suffix = open.length > 0 ? '_unerased' : '';
  for (const dataset of DATASETS) {
    const sql = datasetViewSql(dataset, data, manifests);
    await connection.run(`CREATE OR REPLACE VIEW ${dataset.name}${suffix} AS ${sql.exactlyOnce}`);
    await connection.run(`CREATE OR REPLACE VIEW ${dataset.name}_raw${suffix} AS ${sql.raw}`);
  }
  if (open.length === 0) return;
  const columns = 'org_id, trace_id, user_id, session_id, received_at';
  const rows = DATASETS.flatMap((dataset) => [`${dataset.name}_unerased`, `${dataset.name}_raw_unerased`]).map((view) => `SELECT ${columns} FROM ${view}`).join(' UNION ALL ');
  await connection.run(`CREATE OR REPLACE VIEW erased_traces AS SELECT DISTINCT x.org_id, x.trace_id FROM (${rows}) x WHERE ${erasureMatchSql(open)}`);
  for (const dataset of DATASETS) {
    for (const view of [dataset.name, `${dataset.name}_raw`]) {
      await connection.run(`CREATE OR REPLACE VIEW ${view} AS SELECT v.* FROM ${view}_unerased v ANTI JOIN erased_traces e ON e.org_id = v.org_id AND e.trace_id = v.trace_id`);
    }
  }
}

export interface QueryResult {
  columns: string[];
  rows: Record<string, unknown>[];
}

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
