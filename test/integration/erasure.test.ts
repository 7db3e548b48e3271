import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { type AttributeValue, DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { DuckDBInstance } from '@duckdb/node-api';
import { freePort } from '../../devkit/engines/engines.js';
import { localClientConfig } from '../../devkit/engines/provision.js';
import { localPaths } from '../../devkit/local-stack/local-state.js';
import { NpmStart, ROOT, waitFor } from '../support/npm-start.js';

// The proof of issue 28's erasure, against `npm start` as a user runs it: a lake of 48 hours and 20 users, each
// user's inputs carrying a marker of their own; compact, erase one user, apply; then an independent reader looks
// at every byte the stack keeps (the stream's own files, kinesalite's, are the stated exception).

const run = promisify(execFile);

const ORG = 'erasure-proof';
const USERS = 20;
const HOURS = 48;
const ERASED = 7;
/** The hours (of 0..47) that hold the erased user's traces; everyone else has a trace in every hour. */
const ERASED_HOURS = [3, 10, 17, 24, 31, 40];
const userId = (u: number) => `proof-user-${String(u).padStart(2, '0')}@example.test`;
const marker = (u: number) => `ZQX-marker-of-user-${String(u).padStart(2, '0')}-QXZ`;
const HOUR_MS = 3_600_000;

let stateDir: string;
let stack: NpmStart;
let apiKey: string;
let sentAt: number;

/** Trace `k` (hour k of the lake) of user `u`: its spans' inputs and outputs and its attributes carry the user's marker. */
function traceOf(u: number, k: number, extraInput = '') {
  // 48 distinct hours, each within ingest's ±24 h: hour offsets −23.5 h … +23.5 h from the moment of sending.
  const timestamp = new Date(sentAt + (k - 23.5) * HOUR_MS).toISOString();
  // Deterministic UUIDs: user, hour and the row's number in the last group.
  const id = (n: number) => `00000000-0000-4000-8000-${String(u).padStart(2, '0')}${String(k).padStart(2, '0')}${String(n).padStart(2, '0')}`.padEnd(36, '0');
  return {
    trace_id: id(0),
    timestamp,
    root_span_name: 'agent',
    user_id: userId(u),
    session_id: `conversation-${u}-${k}`,
    attributes: JSON.stringify({ note: `${marker(u)} note` }),
    spans: [
      { span_id: id(1), timestamp, name: 'plan', kind: 'chain', input: JSON.stringify({ text: `${marker(u)} asks about hour ${k}${extraInput}` }), output: JSON.stringify({ text: `answer for ${marker(u)}` }) },
      { span_id: id(2), timestamp, name: 'llm', kind: 'llm', input: JSON.stringify({ text: `${marker(u)} follow-up` }), output: JSON.stringify({ text: 'ok' }) },
    ],
  };
}

async function ingest(traces: unknown[]): Promise<void> {
  const response = await fetch(`${stack.endpoints.api}/v1/traces/ingest`, {
    method: 'POST',
    headers: { 'X-API-Key': apiKey, 'Content-Type': 'application/json' },
    body: JSON.stringify({ traces }),
  });
  const body = await response.text();
  if (response.status !== 200 || (JSON.parse(body) as { rejected: number }).rejected !== 0) throw new Error(`ingest answered ${response.status}: ${body.slice(0, 500)}`);
}

/** `npm run compact` (the harness waits out the timer of `npm start` holding the compaction lock). */
const compact = () => stack.compact();

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => path.join(dir, name))
    .filter((file) => statSync(file).isFile());
}

const isGzip = (bytes: Buffer) => bytes.length > 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;

/** An attribute value as text, binary values inflated where they are gzip (the idempotency records' responses). */
function attributeText(value: AttributeValue): string {
  if (value.B) return isGzip(Buffer.from(value.B)) ? gunzipSync(value.B).toString('utf8') : Buffer.from(value.B).toString('utf8');
  if (value.M) return Object.values(value.M).map(attributeText).join('\n');
  if (value.L) return value.L.map(attributeText).join('\n');
  return JSON.stringify(value);
}

/**
 * The independent reader: every Parquet object of the bucket decoded by DuckDB (every column, every row), every
 * other object of the bucket inflated where it is gzip, and every DynamoDB item of both tables read back through
 * the API. Returns where each needle was found.
 */
async function findEverywhere(needles: readonly string[]): Promise<{ where: string[]; parquetObjects: number; otherObjects: number; items: number }> {
  const where: string[] = [];
  const s3Files = filesUnder(localPaths(stateDir).s3);
  const parquet = s3Files.filter((file) => file.endsWith('.parquet._S3rver_object'));
  const duck = await (await DuckDBInstance.create(':memory:')).connect();
  try {
    for (const file of parquet) {
      const rows = await (await duck.runAndReadAll(`SELECT CAST(to_json(t) AS VARCHAR) AS row FROM read_parquet('${file.replaceAll("'", "''")}') t`)).getRowObjectsJS();
      const text = rows.map((row) => row.row as string).join('\n');
      for (const needle of needles) if (text.includes(needle)) where.push(`${needle} in ${file}`);
    }
  } finally {
    duck.closeSync();
  }
  const others = s3Files.filter((file) => !parquet.includes(file));
  for (const file of others) {
    const bytes = readFileSync(file);
    const text = (isGzip(bytes) ? gunzipSync(bytes) : bytes).toString('utf8');
    for (const needle of needles) if (text.includes(needle)) where.push(`${needle} in ${file}`);
  }
  const dynamodb = new DynamoDBClient(localClientConfig(stack.endpoints.dynamodb));
  let items = 0;
  try {
    for (const table of Object.values(stack.endpoints.tables)) {
      let ExclusiveStartKey: Record<string, AttributeValue> | undefined;
      do {
        const page = await dynamodb.send(new ScanCommand({ TableName: table, ConsistentRead: true, ExclusiveStartKey }));
        for (const item of page.Items ?? []) {
          items++;
          const text = Object.values(item).map(attributeText).join('\n');
          for (const needle of needles) if (text.includes(needle)) where.push(`${needle} in ${table} item ${JSON.stringify(item.pk)}`);
        }
        ExclusiveStartKey = page.LastEvaluatedKey;
      } while (ExclusiveStartKey);
    }
  } finally {
    dynamodb.destroy();
  }
  return { where, parquetObjects: parquet.length, otherObjects: others.length, items };
}

/** Per user other than the erased one: rows, distinct rows, and a checksum of every column of every row, through the exactly-once views. */
async function contentByUser(): Promise<Record<string, unknown>[]> {
  const traces = await stack.query(
    `SELECT user_id, count(*) AS n, count(DISTINCT trace_id) AS distinct_n, md5(string_agg(CAST(to_json(t) AS VARCHAR), '|' ORDER BY trace_id)) AS checksum FROM traces t WHERE org_id = '${ORG}' GROUP BY user_id ORDER BY user_id`,
  );
  const spans = await stack.query(
    `SELECT u.user_id, count(*) AS n, count(DISTINCT s.trace_id || '/' || s.span_id) AS distinct_n, md5(string_agg(CAST(to_json(s) AS VARCHAR), '|' ORDER BY s.trace_id, s.span_index)) AS checksum FROM spans s JOIN (SELECT trace_id, user_id FROM traces WHERE org_id = '${ORG}') u ON u.trace_id = s.trace_id WHERE s.org_id = '${ORG}' GROUP BY u.user_id ORDER BY u.user_id`,
  );
  const rows: Record<string, unknown>[] = [...traces.map((row) => ({ dataset: 'traces', ...row })), ...spans.map((row) => ({ dataset: 'spans', ...row }))];
  return rows.filter((row) => row.user_id !== userId(ERASED));
}

/** Bytes of the compacted objects the manifests name, per hour (`<dt>/<hour>`), read from s3rver's directory. */
function compactedBytesByHour(): Map<string, number> {
  const bucketDir = path.join(localPaths(stateDir).s3, stack.endpoints.bucket);
  const bytes = new Map<string, number>();
  for (const file of filesUnder(path.join(bucketDir, 'manifests', `org_id=${ORG}`)).filter((name) => name.endsWith('manifest.json._S3rver_object'))) {
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as { dt: string; hour: string; traces: { files: string[] }; spans: { files: string[] } };
    const size = [...manifest.traces.files, ...manifest.spans.files].reduce((sum, key) => sum + statSync(`${path.join(bucketDir, ...key.split('/'))}._S3rver_object`).size, 0);
    bytes.set(`${manifest.dt}/${manifest.hour}`, size);
  }
  return bytes;
}

beforeAll(async () => {
  stateDir = mkdtempSync(path.join(tmpdir(), 'erasure-proof-'));
  stack = NpmStart.forState(stateDir, await freePort());
  await stack.start();
  await stack.admin('org', 'create', '--org', ORG, '--per-minute', 'none', '--per-hour', 'none', '--per-day', 'none', '--per-month', 'none');
  apiKey = (await stack.admin('key', 'create', '--org', ORG)).api_key as string;
}, 180_000);

afterAll(async () => {
  await stack?.kill9();
  rmSync(stateDir, { recursive: true, force: true });
});

describe('erasure of one user, proven against npm start', () => {
  it('leaves no byte of the user anywhere but the stream, every other trace exactly once and unchanged, within 1.2x the touched hours', async () => {
    sentAt = Date.now();
    const traces = [];
    for (let k = 0; k < HOURS; k++) {
      for (let u = 0; u < USERS; u++) if (u !== ERASED || ERASED_HOURS.includes(k)) traces.push(traceOf(u, k));
    }
    // One of the user's traces is too large for a stream record: it travels as an overflow object (gzip JSON).
    const oversized = traceOf(ERASED, ERASED_HOURS[0]!, ` ${randomBytes(1_500_000).toString('base64')}`);
    oversized.trace_id = oversized.trace_id.replace(/0000$/, '9999');
    oversized.spans = oversized.spans.map((span, i) => ({ ...span, span_id: span.span_id.replace(/0000$/, `999${i}`) }));
    for (let start = 0; start < traces.length; start += 60) await ingest(traces.slice(start, start + 60));
    await ingest([oversized]);
    const sent = traces.length + 1;
    let landed: unknown;
    expect(sent).toBe((USERS - 1) * HOURS + ERASED_HOURS.length + 1);

    await waitFor(
      'every trace to land',
      async () => ((landed = (await stack.query(`SELECT count(DISTINCT trace_id) AS n FROM traces_raw WHERE org_id = '${ORG}'`))[0]?.n) === sent ? true : undefined),
      240_000,
      () => `${String(landed)} of ${sent} landed\n${stack.output.slice(-3000)}`,
    );
    await compact();
    const hours = await stack.query(`SELECT count(DISTINCT dt || hour) AS n FROM traces WHERE org_id = '${ORG}'`);
    expect(hours).toEqual([{ n: HOURS }]);
    const before = await contentByUser();
    expect(before.filter((row) => row.dataset === 'traces').map((row) => [row.n, row.distinct_n])).toEqual(Array.from({ length: USERS - 1 }, () => [HOURS, HOURS]));
    expect(before.filter((row) => row.dataset === 'spans').map((row) => [row.n, row.distinct_n])).toEqual(Array.from({ length: USERS - 1 }, () => [2 * HOURS, 2 * HOURS]));
    const needles = [marker(ERASED), userId(ERASED)];
    const found = await findEverywhere(needles);
    expect(found.where.length).toBeGreaterThan(0);
    expect(found.where.some((entry) => entry.includes('/overflow/'))).toBe(true);
    const bytesBefore = compactedBytesByHour();
    const touched = [...new Set(ERASED_HOURS.map((k) => new Date(sentAt + (k - 23.5) * HOUR_MS).toISOString()).map((iso) => `${iso.slice(0, 10)}/${iso.slice(11, 13)}`))];
    expect(touched).toHaveLength(ERASED_HOURS.length);

    // Refused: no selector, an unknown organization.
    for (const args of [['--org', ORG], ['--org', 'no-such-org', '--user-id', userId(ERASED)]]) {
      const failure = await run('npm', ['run', '--silent', 'admin', '--', 'erase', 'create', ...args], { cwd: ROOT, env: stack.env }).then(
        () => undefined,
        (error: { code: number; stderr: string }) => error,
      );
      expect(failure?.code).toBe(1);
      expect(failure?.stderr.trim().split('\n')).toHaveLength(1);
    }

    const created = await stack.admin('erase', 'create', '--org', ORG, '--user-id', userId(ERASED));
    expect(created).toMatchObject({ status: 'pending', org_id: ORG });
    const erasureId = created.erasure_id as string;
    // At once locally: the views leave the user's traces out before anything is rewritten.
    expect(await stack.query(`SELECT count(*) AS n FROM traces WHERE user_id = '${userId(ERASED)}'`)).toEqual([{ n: 0 }]);
    expect(await stack.query(`SELECT count(*) AS n FROM spans WHERE input LIKE '%${marker(ERASED)}%' OR output LIKE '%${marker(ERASED)}%'`)).toEqual([{ n: 0 }]);
    expect(await stack.query(`SELECT count(*) AS n FROM spans_raw WHERE input LIKE '%${marker(ERASED)}%'`)).toEqual([{ n: 0 }]);
    expect(await stack.admin('erase', 'list', '--org', ORG)).toMatchObject({ org_id: ORG, erasures: [{ erasure_id: erasureId }] });

    const status = await waitFor(
      'the erasure to be done',
      async () => {
        await compact();
        const shown = await stack.admin('erase', 'status', '--erasure-id', erasureId);
        return shown.status === 'done' ? shown : undefined;
      },
      180_000,
    );
    expect(status).toMatchObject({ status: 'done', hours_found: touched.length, hours_done: touched.length, selector: null, selector_kept_as: 'hmac-sha256' });
    // Every row of the user's traces: a trace row and two spans each, the oversized one included.
    expect(status.rows_removed).toBe(3 * (ERASED_HOURS.length + 1));

    const after = await contentByUser();
    expect(after).toEqual(before);
    const bytesAfter = compactedBytesByHour();
    for (const [hour, size] of bytesBefore) if (!touched.includes(hour)) expect({ hour, size: bytesAfter.get(hour) }).toEqual({ hour, size });
    const rewritten = touched.reduce((sum, hour) => sum + bytesAfter.get(hour)!, 0);
    const touchedBytes = touched.reduce((sum, hour) => sum + bytesBefore.get(hour)!, 0);
    expect(status.bytes_rewritten).toBe(rewritten);
    expect(rewritten).toBeLessThanOrEqual(1.2 * touchedBytes);

    const reader = await findEverywhere(needles);
    expect(reader.where).toEqual([]);
    expect(reader.parquetObjects).toBeGreaterThan(2 * HOURS);
    expect(reader.items).toBeGreaterThan(0);
    // What the stack printed stands for its logs (CloudWatch, deployed): no input, output or user id in them.
    for (const needle of needles) expect(stack.output.includes(needle)).toBe(false);
    // Another user's marker is still there, read the same way: the reader can see what it looks for.
    expect((await findEverywhere([marker(ERASED + 1)])).where.length).toBeGreaterThan(0);
  }, 900_000);
});
