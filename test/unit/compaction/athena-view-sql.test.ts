import { DuckDBInstance } from '@duckdb/node-api';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ERASURE_REQUESTS_TABLE, exactlyOnceViewSql } from '../../../lib/constructs/trace-catalog.js';
import { newRequest, serializeRecord } from '../../../lambda/erasure/erasure-record.js';
import { ERASURE_ROOT, requestKey } from '../../../lambda/lake/keys/erasure-keys.js';
import { compactPending } from '../../../lambda/compaction/compact-pending.js';
import { sliceOfManifestKey } from '../../../lambda/lake/keys/compacted-keys.js';
import { type SliceManifest, parseManifest } from '../../../lambda/lake/manifest.js';
import { exactlyOnceKeys } from '../../../lambda/lake/read-plan.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import { type DatasetName, DATASETS } from '../../../lambda/datasets/registry.js';
import { acceptedSpan, acceptedTrace, inlineRecord, parquetRows, traceContext } from '../../../devkit/builders/landing-builders.js';
import { expireHour } from '../../../lambda/lake/lifecycle/expire-hour.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';

/**
 * The Athena views (Trino SQL, never run here: there is no Athena) against the read plan `npm run query` uses,
 * on the same bucket. DuckDB runs the view's SQL after a mechanical translation of its three Trino-only
 * spellings, so the join, the NULL handling of hours without a manifest and the key matching are executed,
 * not just string-checked. Object keys are the paths below a local root, as `$path` is below `s3://<bucket>/`.
 */
function duckdbDialect(sql: string, root: string): string {
  const translated = sql
    .replaceAll(`regexp_replace("$path", '^s3://[^/]+/', '')`, `substr(filename, ${root.length + 2})`)
    .replaceAll('transform(', 'list_transform(')
    .replaceAll('contains(', 'list_contains(')
    .replaceAll('to_unixtime(', 'epoch(');
  if (translated.includes('$path')) throw new Error('the view reads "$path" in a way this test does not translate');
  return translated;
}

const NOW = new Date('2026-11-23T12:00:00Z');

function manifests(bucket: MemoryBucket): SliceManifest[] {
  return bucket.keys('manifests/').map((key) => parseManifest(bucket.objects.get(key)!.body, sliceOfManifestKey(key)!));
}

/**
 * A bucket holding every case a reader meets: duplicate raw batches folded into generation 2, generation 1
 * superseded but still stored, a raw object that arrived after compaction (not covered), and an organization
 * whose hour has no manifest yet.
 */
async function bucketWithEveryCase(): Promise<MemoryBucket> {
  const bucket = new MemoryBucket();
  const early = Array.from({ length: 6 }, (_, i) => acceptedTrace({}, (i % 3) + 1));
  const records = early.map((t, i) => inlineRecord(i + 1, t));
  await landRecords({ store: bucket }, records);
  // A replay over part of the range: other first record, so another key, holding the same rows again.
  await landRecords({ store: bucket }, records.slice(2, 5));
  await compactPending({ store: bucket, now: () => NOW });
  await landRecords({ store: bucket }, [inlineRecord(20, acceptedTrace({}, 2)), inlineRecord(21, early[0]!)]);
  await compactPending({ store: bucket, now: () => NOW });
  await landRecords({ store: bucket }, [inlineRecord(30, acceptedTrace({}, 1)), inlineRecord(31, early[1]!)]);
  const otherOrg = traceContext({ org_id: 'org-b' });
  await landRecords({ store: bucket }, [inlineRecord(40, acceptedTrace({}, 2), otherOrg), inlineRecord(41, acceptedTrace({}, 1), otherOrg)]);
  return bucket;
}

function writeToDisk(bucket: MemoryBucket, root: string): void {
  for (const key of bucket.keys()) {
    mkdirSync(dirname(join(root, key)), { recursive: true });
    writeFileSync(join(root, key), bucket.objects.get(key)!.body);
  }
}

/**
 * The Glue tables as DuckDB views over the bucket on disk: both datasets' raw and compacted tables, the manifests,
 * and the erasure requests (an empty table when there are none, as Athena reads an empty prefix).
 */
/** The columns the Glue table `erasure_requests` declares, as DuckDB types. */
const REQUEST_COLUMNS = "erasure_id: 'VARCHAR', status: 'VARCHAR', requested_at_micros: 'BIGINT', user_ids: 'VARCHAR[]', session_ids: 'VARCHAR[]', trace_ids: 'VARCHAR[]'";

async function catalogOf(dir: string) {
  const duck = await (await DuckDBInstance.create(':memory:')).connect();
  await duck.run("SET TimeZone = 'UTC'");
  const struct = `STRUCT(files VARCHAR[], "rows" BIGINT, covered STRUCT("key" VARCHAR, etag VARCHAR)[])`;
  for (const name of ['traces', 'spans']) {
    await duck.run(`CREATE VIEW ${name}_raw AS SELECT * FROM read_parquet('${dir}/${name}/*/*/*/*.parquet', ${HIVE}, filename = true)`);
    await duck.run(`CREATE VIEW ${name}_compacted AS SELECT * FROM read_parquet('${dir}/compacted/${name}/*/*/*/*.parquet', ${HIVE}, filename = true)`);
  }
  await duck.run(`CREATE VIEW slice_manifests AS SELECT * FROM read_json('${dir}/manifests/*/*/*/manifest.json', ${HIVE}, format = 'newline_delimited', columns = {traces: '${struct}', spans: '${struct}'})`);
  const requests = `${dir}/${ERASURE_ROOT}requests`;
  await duck.run(
    existsSync(requests)
      ? `CREATE VIEW ${ERASURE_REQUESTS_TABLE} AS SELECT * FROM read_json('${requests}/*/*.json', ${HIVE}, format = 'newline_delimited', columns = {${REQUEST_COLUMNS}})`
      : `CREATE TABLE ${ERASURE_REQUESTS_TABLE} (org_id VARCHAR, status VARCHAR, requested_at_micros BIGINT, user_ids VARCHAR[], session_ids VARCHAR[], trace_ids VARCHAR[])`,
  );
  return duck;
}

const identity: Record<DatasetName, string> = { traces: 'trace_id', spans: `trace_id || '/' || span_id` };
const HIVE = 'hive_partitioning = true, hive_types_autocast = false';

describe('the Athena exactly-once views, executed', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'athena-view-'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  /** The bucket on disk under `dir`, with DuckDB views named as the Glue tables the view SQL reads. */
  async function viewOf(bucket: MemoryBucket, dir: string) {
    writeToDisk(bucket, dir);
    const duck = await catalogOf(dir);
    const rows = async (sql: string) => (await (await duck.runAndReadAll(sql)).getRowObjectsJS()).map((row) => row.id as string).sort();
    return { duck, rows };
  }

  it.each(DATASETS.map((dataset) => [dataset.name, dataset] as const))('%s: the view returns exactly the rows of the objects the read plan names', async (name, dataset) => {
    const bucket = await bucketWithEveryCase();
    const stored = manifests(bucket);
    expect(stored.map((manifest) => [manifest.org_id, manifest.generation, manifest.superseded.length])).toEqual([['org-a', 2, 1]]);
    const dir = join(root, name);
    const { duck, rows } = await viewOf(bucket, dir);

    const viewed = await rows(`SELECT ${identity[name]} AS id FROM (${duckdbDialect(exactlyOnceViewSql(dataset), dir)})`);
    const planned = exactlyOnceKeys(name, stored, bucket.keys(`${name}/`)).map((key) => `'${join(dir, key)}'`);
    const read = await rows(`SELECT ${identity[name]} AS id FROM read_parquet([${planned.join(', ')}])`);

    expect(viewed).toEqual(read);
    // The trace re-sent after the last compaction is served from raw beside its compacted copy, the
    // documented window until the next compaction. Nothing else repeats, and nothing is missing.
    const all = await rows(`SELECT DISTINCT ${identity[name]} AS id FROM ${name}_raw`);
    expect(new Set(viewed)).toEqual(new Set(all));
    expect(viewed.length - all.length).toBe(name === 'traces' ? 1 : 2);
    duck.closeSync();
  });

  it.each(DATASETS.map((dataset) => [dataset.name, dataset] as const))('%s: an hour whose raw objects and manifest the retention sweep deleted shows nothing, though its compacted objects are still stored', async (name, dataset) => {
    const bucket = await bucketWithEveryCase();
    await compactPending({ store: bucket, now: () => NOW });
    const orgB = await organizationIds(bucket, name, 'org-b');
    expect(orgB.length).toBeGreaterThan(0);
    await expireHour(bucket, { slice: { orgId: 'org-a', dt: '2026-11-22', hour: '10' }, deleteCompacted: false });
    expect(bucket.keys(`compacted/${name}/org_id=org-a/`).length).toBeGreaterThan(0);
    const dir = join(root, `${name}-expired`);
    const { duck, rows } = await viewOf(bucket, dir);
    expect(await rows(`SELECT ${identity[name]} AS id FROM (${duckdbDialect(exactlyOnceViewSql(dataset), dir)})`)).toEqual(orgB);
    duck.closeSync();
  });

  it.each(DATASETS.map((dataset) => [dataset.name, dataset] as const))('%s: an open erasure request hides every row of the traces it names, and only those', async (name, dataset) => {
    const bucket = new MemoryBucket();
    const alice = (hour: string, received: string, request: string) => {
      const at = `2026-11-22T${hour}:00:00.000001Z`;
      // Only the span names alice: the whole trace goes, trace row included.
      const trace = acceptedTrace({ timestamp: at, spans: [acceptedSpan({ timestamp: at, user_id: 'alice' }, 0), acceptedSpan({ timestamp: at }, 1)] });
      return { trace, context: traceContext({ received_at: received, request_id: request }) };
    };
    const before = [alice('10', '2026-11-22T10:00:01.000000Z', 'r1'), alice('11', '2026-11-22T11:00:01.000000Z', 'r2')];
    const after = alice('11', '2026-11-23T12:00:01.000000Z', 'r3');
    const otherOrg = alice('10', '2026-11-22T10:00:01.000000Z', 'r4');
    const bob = acceptedTrace({ user_id: 'bob' }, 2);
    await landRecords({ store: bucket }, [inlineRecord(1, before[0]!.trace, before[0]!.context), inlineRecord(2, bob), inlineRecord(3, otherOrg.trace, traceContext({ ...otherOrg.context, org_id: 'org-b' }))]);
    await compactPending({ store: bucket, now: () => NOW });
    await landRecords({ store: bucket }, [inlineRecord(4, before[1]!.trace, before[1]!.context), inlineRecord(5, after.trace, after.context)]);
    const request = newRequest('org-a', { user_ids: ['alice'], session_ids: [], trace_ids: [] }, new Date('2026-11-23T12:00:00Z'));
    await bucket.put(requestKey('org-a', request.erasure_id), serializeRecord(request));
    const dir = join(root, `erasure-${name}`);
    writeToDisk(bucket, dir);
    const duck = await catalogOf(dir);
    const viewed = (await (await duck.runAndReadAll(`SELECT org_id, trace_id FROM (${duckdbDialect(exactlyOnceViewSql(dataset), dir)})`)).getRowObjectsJS()).map((row) => `${row.org_id as string} ${row.trace_id as string}`);

    const erased = new Set(before.map(({ trace }) => `org-a ${trace.trace_id}`));
    expect(viewed.filter((row) => erased.has(row))).toEqual([]);
    const spansOf = (trace: { spans: unknown[] }) => (name === 'traces' ? 1 : trace.spans.length);
    expect(viewed.filter((row) => row === `org-a ${after.trace.trace_id}`)).toHaveLength(spansOf(after.trace));
    expect(viewed.filter((row) => row === `org-b ${otherOrg.trace.trace_id}`)).toHaveLength(spansOf(otherOrg.trace));
    expect(viewed.filter((row) => row === `org-a ${bob.trace_id}`)).toHaveLength(spansOf(bob));
    expect(viewed).toHaveLength(3 * (name === 'traces' ? 1 : 2));

    // Once done (the selector reduced to keyed hashes), the request hides nothing: the rewritten hours hold none of it.
    await bucket.put(requestKey('org-a', request.erasure_id), serializeRecord({ ...request, status: 'done', user_ids: [], selector_hmacs: ['x'] }));
    writeToDisk(bucket, dir);
    const afterDone = await (await catalogOf(dir)).runAndReadAll(`SELECT count(*) AS n FROM (${duckdbDialect(exactlyOnceViewSql(dataset), dir)})`);
    expect(Number(afterDone.getRowObjectsJS()[0]!.n)).toBe(5 * (name === 'traces' ? 1 : 2));
    duck.closeSync();
  });
});

/** The ids of one organization's rows in the read plan's view of the bucket. */
async function organizationIds(bucket: MemoryBucket, name: DatasetName, orgId: string): Promise<string[]> {
  const keys = exactlyOnceKeys(name, manifests(bucket), bucket.keys(`${name}/`)).filter((key) => key.includes(`org_id=${orgId}/`));
  const rows = await Promise.all(keys.map(async (key) => parquetRows(bucket.objects.get(key)!.body)));
  return rows.flat().map((row) => (name === 'traces' ? (row.trace_id as string) : `${row.trace_id as string}/${row.span_id as string}`)).sort();
}
