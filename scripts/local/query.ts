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
import { MANIFEST_ROOT, sliceId, sliceOfManifestKey } from '../../lambda/lake/keys/compacted-keys.js';
import { sliceOfRawKey } from '../../lambda/lake/keys/raw-keys.js';
import { InvalidManifestError, type SliceManifest, parseManifest } from '../../lambda/lake/manifest.js';
import { exactlyOnceKeys } from '../../lambda/lake/read-plan.js';
import { type ErasureRequest, parseRequest } from '../../lambda/erasure/erasure-record.js';
import { ERASURE_ROOT } from '../../lambda/lake/keys/erasure-keys.js';
import { COLUMN_TYPE_NAMES, DATASETS, type DatasetName, type DatasetSpec } from '../../lambda/datasets/registry.js';
import { LOCAL_NAMES, localPaths } from '../../devkit/local-stack/local-state.js';

/** s3rver keeps each object in a file named `<last key segment>._S3rver_object`. */
const S3RVER_OBJECT_SUFFIX = '._S3rver_object';

/** Where the landed objects of the local stack are on disk. */
export interface LandedData {
  /** s3rver's directory (`<state dir>/s3`). */
  s3Directory: string;
  bucket: string;
  /** Keys under `prefix` ending in `suffix`; by default {@link keysOnDisk}. A test's can delete between list and read. */
  list?: (prefix: string, suffix: string) => Promise<string[]>;
}

export function localLandedData(): LandedData {
  return { s3Directory: localPaths().s3, bucket: LOCAL_NAMES.bucket };
}

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';

/** Names in `dir`, recursively; a directory emptied and removed while it is walked held no objects. */
function filesUnder(dir: string): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    if (isMissing(error)) return [];
    throw error;
  }
  return entries.flatMap((entry) => (entry.isDirectory() ? filesUnder(path.join(dir, entry.name)).map((name) => `${entry.name}/${name}`) : [entry.name]));
}

/** Keys of the objects under `prefix` whose keys end in `suffix`, from s3rver's directory (one file per object). */
export function keysOnDisk(data: LandedData, prefix: string, suffix: string): string[] {
  const dir = path.join(data.s3Directory, data.bucket, prefix);
  if (!existsSync(dir)) return [];
  return filesUnder(dir)
    .filter((name) => name.endsWith(`${suffix}${S3RVER_OBJECT_SUFFIX}`))
    .map((name) => `${prefix}${name.slice(0, -S3RVER_OBJECT_SUFFIX.length)}`)
    .sort();
}

/** The file s3rver keeps `key` in. */
export const fileOf = (data: LandedData, key: string) => path.join(data.s3Directory, data.bucket, ...key.split('/')) + S3RVER_OBJECT_SUFFIX;

const listKeys = (data: LandedData, prefix: string, suffix: string) => (data.list ? data.list(prefix, suffix) : Promise.resolve(keysOnDisk(data, prefix, suffix)));

/** An object's bytes, or undefined when it was deleted since it was listed. */
function readListed(data: LandedData, key: string): Buffer | undefined {
  try {
    return readFileSync(fileOf(data, key));
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

/**
 * Objects listed and gone when read: the retention sweep deletes an hour's raw objects and then its manifest, an
 * erasure the raw objects that held an erased row, each possibly between a reader's listing and its reads.
 */
export class VanishedObjectsError extends Error {
  constructor(
    readonly keys: readonly string[],
    /** The hours (slice ids) the objects belong to. */
    readonly hours: readonly string[],
    options?: ErrorOptions,
  ) {
    super(`${keys.length} object(s) vanished between listing and reading: ${keys.slice(0, 5).join(', ')}`, options);
    this.name = 'VanishedObjectsError';
  }
}

/** One listing of the bucket, every manifest read before the raw objects were listed: what the views are made of. */
export interface LandedListing {
  manifests: SliceManifest[];
  raw: Record<DatasetName, string[]>;
  /** The erasure requests not done yet. */
  open: ErasureRequest[];
  /** Manifests and requests listed but gone when read. */
  vanished: string[];
  /** The hours of the manifests among them. */
  vanishedHours: string[];
}

/**
 * Lists the bucket: the slice manifests, each read once, then the erasure requests, then the raw objects (after the
 * manifests: see {@link datasetViewSql}). A manifest or request deleted between its listing and its read is left out
 * and named in `vanished`.
 */
export async function listLanded(data: LandedData): Promise<LandedListing> {
  const manifests: SliceManifest[] = [];
  const vanished: string[] = [];
  const vanishedHours: string[] = [];
  for (const key of await listKeys(data, MANIFEST_ROOT, 'manifest.json')) {
    const slice = sliceOfManifestKey(key);
    if (!slice) throw new InvalidManifestError(`${key} is not where a slice's manifest is kept`);
    const bytes = readListed(data, key);
    if (bytes) manifests.push(parseManifest(bytes, slice));
    else {
      vanished.push(key);
      vanishedHours.push(sliceId(slice));
    }
  }
  const open: ErasureRequest[] = [];
  for (const key of await listKeys(data, `${ERASURE_ROOT}requests/`, '.json')) {
    const bytes = readListed(data, key);
    if (!bytes) vanished.push(key);
    else {
      const request = parseRequest(bytes);
      if (request.status !== 'done') open.push(request);
    }
  }
  const raw: Record<DatasetName, string[]> = { traces: [], spans: [] };
  for (const dataset of DATASETS) raw[dataset.name] = await listKeys(data, `${dataset.name}/`, '.parquet');
  return { manifests, raw, open, vanished, vanishedHours };
}

/** The listing without the given hours: their manifests, the compacted objects those name, and their raw objects. */
export function withoutHours(listing: LandedListing, hours: ReadonlySet<string>): LandedListing {
  const kept = (key: string) => {
    const slice = sliceOfRawKey(key);
    return !slice || !hours.has(sliceId(slice));
  };
  return {
    manifests: listing.manifests.filter((manifest) => !hours.has(sliceId({ orgId: manifest.org_id, dt: manifest.dt, hour: manifest.hour }))),
    raw: { traces: listing.raw.traces.filter(kept), spans: listing.raw.spans.filter(kept) },
    open: listing.open,
    vanished: listing.vanished,
    vanishedHours: listing.vanishedHours,
  };
}

/** Every object of the listing a query may read, with its hour. */
function listedObjects(listing: LandedListing): Map<string, string> {
  const hourOf = new Map<string, string>();
  for (const manifest of listing.manifests) {
    const hour = sliceId({ orgId: manifest.org_id, dt: manifest.dt, hour: manifest.hour });
    for (const dataset of DATASETS) for (const key of manifest[dataset.name].files) hourOf.set(key, hour);
  }
  for (const key of [...listing.raw.traces, ...listing.raw.spans]) {
    const slice = sliceOfRawKey(key);
    if (slice) hourOf.set(key, sliceId(slice));
  }
  return hourOf;
}

/** The objects of the listing no longer on disk, as {@link VanishedObjectsError}, or undefined when every one is there. */
function vanishedSince(data: LandedData, listing: LandedListing, cause: unknown): VanishedObjectsError | undefined {
  const gone = [...listedObjects(listing)].filter(([key]) => !existsSync(fileOf(data, key)));
  if (gone.length === 0) return undefined;
  return new VanishedObjectsError(gone.map(([key]) => key), [...new Set(gone.map(([, hour]) => hour))], { cause });
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
 * landed. The manifests must have been read before the raw objects were listed: a raw object landed after its slice's
 * manifest was read is then simply not covered by it and is shown from raw (see "What readers see" in docs/landing.md).
 */
export function datasetViewSql(dataset: DatasetSpec, data: LandedData, listing: Pick<LandedListing, 'manifests' | 'raw'>): { exactlyOnce: string; raw: string } {
  const rawKeys = listing.raw[dataset.name];
  return { exactlyOnce: selectObjects(dataset, data, exactlyOnceKeys(dataset.name, listing.manifests, rawKeys)), raw: selectObjects(dataset, data, rawKeys) };
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
 * Creates the views `traces` and `spans` (every row once) and `traces_raw` and `spans_raw` (as landed) over one
 * listing (by default a new one). While an erasure request is open, all four leave out every row of the traces it
 * names (a trace row or any span matching), at once: the request object is read when the listing is made.
 */
export async function createDatasetViews(connection: DuckDBConnection, data: LandedData, listing?: LandedListing): Promise<void> {
  const listed = listing ?? (await listLanded(data));
  if (!listing && listed.vanished.length > 0) throw new VanishedObjectsError(listed.vanished, listed.vanishedHours);
  const { open, ...objects } = listed;
  const suffix = open.length > 0 ? '_unerased' : '';
  for (const dataset of DATASETS) {
    const sql = datasetViewSql(dataset, data, objects);
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

/** Runs every statement of `sql` over one listing, in a database of its own; objects of the listing deleted meanwhile throw {@link VanishedObjectsError}. */
async function queryListing(sql: string, data: LandedData, listing: LandedListing): Promise<QueryResult[]> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    await connection.run("SET TimeZone = 'UTC'");
    await createDatasetViews(connection, data, listing);
    const statements = await connection.extractStatements(sql);
    const results: QueryResult[] = [];
    for (let index = 0; index < statements.count; index++) {
      const reader = await (await statements.prepare(index)).runAndReadAll();
      results.push({ columns: reader.columnNames(), rows: reader.convertRowObjects(clientJson) });
    }
    return results;
  } catch (error) {
    throw vanishedSince(data, listing, error) ?? error;
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/**
 * Runs SQL (one statement or several) against the landed data of the local stack (or `data`): one result per
 * statement. An object deleted between the listing and its read (the retention sweep deleting an hour, an erasure its
 * raw copies) makes it list once more and run again; an hour whose objects vanish from that second listing too is
 * left out, as the deletion under way leaves it, and the statements run again without it.
 */
export async function queryLanded(sql: string, data: LandedData = localLandedData()): Promise<QueryResult[]> {
  const first = await listLanded(data);
  if (first.vanished.length === 0) {
    try {
      return await queryListing(sql, data, first);
    } catch (error) {
      if (!(error instanceof VanishedObjectsError)) throw error;
    }
  }
  const listing = await listLanded(data);
  const skipped = new Set(listing.vanishedHours);
  for (;;) {
    try {
      return await queryListing(sql, data, withoutHours(listing, skipped));
    } catch (error) {
      if (!(error instanceof VanishedObjectsError)) throw error;
      const fresh = error.hours.filter((hour) => !skipped.has(hour));
      // Nothing new to leave out: running again would fail the same way.
      if (fresh.length === 0) throw error;
      for (const hour of fresh) skipped.add(hour);
    }
  }
}
