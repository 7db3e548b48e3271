import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { MAX_DECODED_BODY_BYTES } from '../../lambda/shared/request-limits.js';
import { type BundledFunctions, startBundledFunctions } from '../../devkit/local-stack/bundled-functions.js';
import { ASSEMBLY_ENV, type CloudAssembly, type TemplateJson } from '../../devkit/local-stack/cloud-assembly.js';
import { ESM_REQUIRE_BANNER } from '../../lib/constructs/house-function.js';
import { synthStack } from '../infra/support/synth-stack.js';
import { type HttpGateway, startHttpGateway } from '../../devkit/local-stack/http-gateway.js';
import { kinesisEventRecord } from '../../devkit/lambda/lambda-events.js';
import { LOCAL_REGION, localClientConfig } from '../../devkit/engines/provision.js';
import { provisionOrg, type ProvisionedOrg } from '../../devkit/engines/engine-fixtures.js';
import { useEngineSuite } from '../support/engine-suite.js';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { compactPending } from '../../lambda/compaction/compact-pending.js';
import { S3LakeStore } from '../../lambda/lake/s3-lake-store.js';
import { newRequest } from '../../lambda/erasure/erasure-record.js';
import { StoredErasures, erasureStatus } from '../../lambda/erasure/stored-erasures.js';
import { landRecords } from '../../lambda/landing/land-records.js';
import { S3LandingStore } from '../../lambda/landing/s3-landing-store.js';
import { acceptedSpan, acceptedTrace, inlineRecord, traceContext } from '../../devkit/builders/landing-builders.js';

/**
 * The artifacts `cdk deploy` ships, run as Lambda runs them: the app synthesized once (esbuild,
 * offline), each function's bundle from cdk.out in its own fresh Node 24 process with only the
 * template's environment and Lambda's own variables, behind the local API Gateway, against the
 * local engines (reached through AWS_ENDPOINT_URL_* only).
 */
const PROJECT_ROOT = path.resolve(__dirname, '../..');
const NAMES = { tenancy: 'bundled-tenancy', rate: 'bundled-rate', stream: 'bundled-stream', bucket: 'bundled-data' };

const suite = useEngineSuite({ tables: { tenancy: NAMES.tenancy, rate: NAMES.rate }, stream: { name: NAMES.stream }, bucket: NAMES.bucket, duckdb: true });

let outdir: string;
let bundled: BundledFunctions;
let assembly: CloudAssembly;
let functions: BundledFunctions['functions'];
let gateway: HttpGateway;
let org: ProvisionedOrg;

/** Three hours ago, so the hour is closed and settled when the planner looks. */
const landedAt = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3 * 3_600_000 + 60_000);
const iso = (offsetMs = 0) => new Date(landedAt.getTime() + offsetMs).toISOString();
const batch = (names: string[]) => ({
  traces: names.map((name) => ({ timestamp: iso(), root_span_name: name, model: 'gpt-x', spans: [{ timestamp: iso(10), name: `${name}-llm`, input_tokens: 3 }] })),
});

beforeAll(async () => {
  outdir = mkdtempSync(path.join(tmpdir(), 'cdk-out-'));
  bundled = await startBundledFunctions({
    projectRoot: PROJECT_ROOT,
    outdir,
    region: LOCAL_REGION,
    names: { tenancyTable: NAMES.tenancy, rateTable: NAMES.rate, stream: NAMES.stream, bucket: NAMES.bucket },
    endpoints: { dynamodb: suite.endpoints.dynamodb ?? '', kinesis: suite.endpoints.kinesis ?? '', s3: suite.endpoints.s3 ?? '' },
  });
  ({ assembly, functions } = bundled);
  gateway = await startHttpGateway({ port: 0, handler: (event: APIGatewayProxyEvent) => functions.ingest.invoke<APIGatewayProxyResult>(event) });
  org = await provisionOrg(suite.tenancy);
}, 240_000);

afterAll(async () => {
  await gateway?.stop();
  await bundled?.stop();
  if (outdir) rmSync(outdir, { recursive: true, force: true });
});

const post = (route: string, body: Buffer | string, headers: Record<string, string>) =>
  fetch(`${gateway.url}${route}`, { method: 'POST', headers: { 'X-API-Key': org.apiKey, ...headers }, body });

describe('the bundles cdk deploy ships', () => {
  it('are five Node 24 functions whose handler the template names, each running from a sandbox where no node_modules is reachable', () => {
    expect(Object.keys(assembly.functions).sort()).toEqual(['ingest', 'landing', 'planner', 'sweeper', 'worker']);
    for (const [role, fn] of Object.entries(assembly.functions)) {
      expect([role, fn.runtime, fn.handler]).toEqual([role, 'nodejs24.x', 'index.handler']);
      expect(existsSync(path.join(fn.assetDir, 'index.mjs'))).toBe(true);
      const root = functions[fn.role].taskRoot;
      expect(readdirSync(root)).not.toContain('node_modules');
      for (let dir = root; dir !== path.dirname(dir); dir = path.dirname(dir)) expect(existsSync(path.join(dir, 'node_modules'))).toBe(false);
    }
  });

  it('are ESM bundles with the createRequire banner, exporting the handler, with an external source map', () => {
    for (const fn of Object.values(assembly.functions)) {
      const bundle = readFileSync(path.join(fn.assetDir, 'index.mjs'), 'utf8');
      expect([fn.role, bundle.startsWith(ESM_REQUIRE_BANNER)]).toEqual([fn.role, true]);
      expect(bundle).toMatch(/export\s*\{[^}]*\bhandler\b/);
      expect([fn.role, existsSync(path.join(fn.assetDir, 'index.mjs.map'))]).toEqual([fn.role, true]);
    }
  });

  it('deploy the template test/infra asserts on: synthesized there without bundling, it differs only in the five code assets\' keys', () => {
    const unbundled = synthStack({ stackName: assembly.stackName, env: ASSEMBLY_ENV }).template.toJSON() as TemplateJson;
    // The four functions, not the provider CDK adds for the planner's first run (its code is CDK's, the same in both).
    const codeKeys = (template: TemplateJson) =>
      Object.entries(template.Resources)
        .filter(([id, resource]) => resource.Type === 'AWS::Lambda::Function' && !id.startsWith('AWSCDKTriggerCustomResourceProvider'))
        .map(([, resource]) => resource)
        .map((resource) => (resource.Properties?.Code as { S3Key: string }).S3Key);
    const bundledKeys = codeKeys(assembly.template);
    expect(bundledKeys).toHaveLength(5);
    expect(codeKeys(unbundled).filter((key) => bundledKeys.includes(key))).toEqual([]);
    const withoutCodeKeys = (template: TemplateJson) => {
      const keys = codeKeys(template);
      // The planner's version (its first run's trigger names it) is named after a hash of its code, too.
      const text = JSON.stringify(template).replace(/(CompactionPlannerCurrentVersion[0-9A-F]{8})[0-9a-f]{32}/g, '$1<code hash>');
      return JSON.parse(text, (key, value: unknown) => (key === 'S3Key' && keys.includes(value as string) ? 'code' : value)) as unknown;
    };
    expect(withoutCodeKeys(unbundled)).toEqual(withoutCodeKeys(assembly.template));
  });

  it('ingest takes a plain JSON batch, a gzip batch and an OTLP export through the gateway', async () => {
    const plain = await post('/v1/traces/ingest', JSON.stringify(batch(['plain-1', 'plain-2'])), { 'Content-Type': 'application/json' });
    await expect(plain.json()).resolves.toMatchObject({ accepted: 2, rejected: 0 });
    const gzip = await post('/v1/traces/ingest', gzipSync(JSON.stringify(batch(['gzip-1']))), { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
    await expect(gzip.json()).resolves.toMatchObject({ accepted: 1, rejected: 0 });

    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const start = landedAt.getTime() + 20;
    provider.getTracer('bundled').startSpan('otlp-root', { startTime: start }).end(start + 5);
    const otlp = await post('/otel/v1/traces', gzipSync(ProtobufTraceSerializer.serializeRequest(exporter.getFinishedSpans()) as Uint8Array), {
      'Content-Type': 'application/x-protobuf',
      'Content-Encoding': 'gzip',
    });
    expect(otlp.status).toBe(200);
  });

  it('ingest answers 413 batch_too_large just over the ceiling, and the gateway 500 request_not_delivered where Lambda would refuse the event', async () => {
    const over = await post('/v1/traces/ingest', ' '.repeat(MAX_DECODED_BODY_BYTES + 1), { 'Content-Type': 'application/json' });
    expect(over.status).toBe(413);
    await expect(over.json()).resolves.toMatchObject({ code: 'batch_too_large' });
    const refused = await post('/v1/traces/ingest', ' '.repeat(5 * 1024 * 1024), { 'Content-Type': 'application/json' });
    expect(refused.status).toBe(500);
    expect(refused.headers.get('retry-after')).toBeNull();
    await expect(refused.json()).resolves.toMatchObject({ code: 'request_not_delivered' });
  });

  it('landing turns the stream into Parquet, planner queues the hour, worker compacts it, and the Parquet has the Glue columns of the template', async () => {
    for (const shard of await suite.readShards()) {
      const records = shard.map((record) =>
        kinesisEventRecord({
          shardId: record.shardId,
          sequenceNumber: record.sequenceNumber,
          partitionKey: 'p',
          data: record.data,
          arrivedAt: record.approximateArrivalTimestamp,
          streamArn: `arn:aws:kinesis:${LOCAL_REGION}:000000000000:stream/${NAMES.stream}`,
          region: LOCAL_REGION,
        }),
      );
      // The landing reports nothing on success and throws to have the batch retried.
      if (records.length > 0) await functions.landing.invoke({ Records: records });
    }
    const compaction = await bundled.compact();
    expect(compaction.slices).toBeGreaterThan(0);
    expect(compaction.batchItemFailures).toEqual([]);

    const { dir, keys } = await suite.downloadBucket();
    for (const dataset of ['traces', 'spans'] as const) {
      const raw = keys.filter((key) => key.startsWith(`${dataset}/org_id=${org.orgId}/`) && key.endsWith('.parquet'));
      expect(raw.length).toBeGreaterThan(0);
      for (const key of raw) expect(await parquetColumns(path.join(dir, key))).toEqual(glueColumns(`${dataset}_raw`));
      const compacted = keys.filter((key) => key.startsWith(`compacted/${dataset}/org_id=${org.orgId}/`) && key.endsWith('.parquet'));
      expect(compacted).toHaveLength(1);
      const file = path.join(dir, compacted[0] as string);
      expect(await parquetColumns(file)).toEqual(glueColumns(`${dataset}_compacted`));
      const rows = await suite.query(`SELECT count(*)::INT AS n FROM read_parquet('${file}')`);
      // Two plain traces, one gzip, one OTLP; one span each.
      expect(rows[0]?.n).toBe(4);
    }
  });

  it('an erasure request is applied by the bundled planner and worker: the secret made once in the tenancy table, the trace gone, the request done', async () => {
    const { dir, keys } = await suite.downloadBucket();
    const compacted = keys.find((key) => key.startsWith(`compacted/traces/org_id=${org.orgId}/`) && key.endsWith('.parquet'))!;
    const traceId = String((await suite.query(`SELECT trace_id FROM read_parquet('${path.join(dir, compacted)}') ORDER BY trace_id LIMIT 1`))[0]?.trace_id);
    const s3 = new S3Client(localClientConfig(suite.endpoints.s3 ?? ''));
    try {
      const store = new S3LakeStore(s3, NAMES.bucket);
      const erasures = new StoredErasures(store, { get: () => Promise.reject(new Error('the test holds no secret')) });
      const request = newRequest(org.orgId, { user_ids: [], session_ids: [], trace_ids: [traceId] }, new Date());
      await erasures.put(request);
      // The first run finds the hour and queues it, the worker rewrites it; the second marks the request done.
      for (let run = 0; run < 2; run++) expect((await bundled.compact()).batchItemFailures).toEqual([]);
      const status = await erasureStatus(erasures, (await erasures.request(org.orgId, request.erasure_id))!);
      expect(status).toMatchObject({ status: 'done', hours_done: 1, rows_removed: 2, selector: null });
      const after = await suite.downloadBucket();
      const files = after.keys.filter((key) => key.startsWith(`compacted/`) && key.includes(`org_id=${org.orgId}/`) && key.endsWith('.parquet')).map((key) => `'${path.join(after.dir, key)}'`);
      expect(await suite.query(`SELECT count(*)::INT AS n FROM read_parquet([${files.join(', ')}], union_by_name = true) WHERE trace_id = '${traceId}'`)).toEqual([{ n: 0 }]);
      const dynamodb = new DynamoDBClient(localClientConfig(suite.endpoints.dynamodb ?? ''));
      try {
        const { Item } = await dynamodb.send(new GetItemCommand({ TableName: NAMES.tenancy, Key: { pk: { S: 'SECRETS' }, sk: { S: 'ERASURE_HMAC' } } }));
        expect(Item?.secret?.B?.byteLength).toBe(32);
      } finally {
        dynamodb.destroy();
      }
    } finally {
      s3.destroy();
    }
  });
});

describe('the retention sweeper and worker bundles', () => {
  it('delete every object of an hour past its organization\'s retention, in two scheduled runs, and nothing else', async () => {
    const orgId = 'aged';
    const now = new Date().toISOString();
    await suite.tenancy.putPlan({ name: 'week', quotas: { minute: null, hour: null, day: null, month: null }, retentionDays: 3, createdAt: now, updatedAt: now }, 'create');
    await suite.tenancy.putOrganization({ orgId, plan: 'week', overrides: {}, planStatus: 'active', billingStatus: 'ok', createdAt: now, updatedAt: now }, { createOnly: true });
    // Ten days old: landed directly (a timestamp that old is refused at ingest), compacted in-process.
    const hour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 10 * 24 * 3_600_000);
    const at = new Date(hour.getTime() + 60_000).toISOString().replace('Z', '000Z');
    const trace = acceptedTrace({ timestamp: at, spans: [acceptedSpan({ timestamp: at })] });
    await landRecords({ store: new S3LandingStore(suite.s3, NAMES.bucket) }, [inlineRecord(1, trace, traceContext({ org_id: orgId, received_at: hour.toISOString() }))]);
    await compactPending({ store: new S3LakeStore(suite.s3, NAMES.bucket) }, { includeOpenHours: true });
    const keysOf = async (prefix = '') => (await suite.downloadBucket()).keys.filter((key) => key.includes(prefix));
    const others = (await keysOf()).filter((key) => !key.includes(`org_id=${orgId}/`));
    expect((await keysOf(`org_id=${orgId}/`)).length).toBeGreaterThanOrEqual(5);

    const first = await bundled.compact();
    expect(first.batchItemFailures).toEqual([]);
    expect((await keysOf(`org_id=${orgId}/`)).every((key) => key.startsWith('compacted/'))).toBe(true);
    const second = await bundled.compact();
    expect(second.batchItemFailures).toEqual([]);
    expect(await keysOf(`org_id=${orgId}/`)).toEqual([]);
    expect((await keysOf()).filter((key) => !key.includes(`org_id=${orgId}/`))).toEqual(others);
  });
});

/** A Parquet file's columns as DuckDB reads them, each type named as Glue names it. */
async function parquetColumns(file: string): Promise<[string, string][]> {
  const described = await suite.query(`DESCRIBE SELECT * FROM read_parquet('${file}', hive_partitioning = false)`);
  return described.map((row) => [String(row.column_name), duckTypeAsGlue(String(row.column_type))]);
}

/** The columns of a Glue table of the synthesized template, without its partition keys. */
function glueColumns(tableName: string): [string, string][] {
  const table = Object.values(assembly.template.Resources).find(
    (resource) => resource.Type === 'AWS::Glue::Table' && (resource.Properties?.TableInput as { Name?: string } | undefined)?.Name === tableName,
  );
  const columns = (table?.Properties?.TableInput as { StorageDescriptor: { Columns: { Name: string; Type: string }[] } } | undefined)?.StorageDescriptor.Columns;
  if (!columns) throw new Error(`no Glue table ${tableName} in the template`);
  return columns.map((column) => [column.Name, column.Type]);
}

/** DuckDB's name of a Parquet column's type, as the Hive type Glue declares for it. */
function duckTypeAsGlue(type: string): string {
  const map: Record<string, string> = { VARCHAR: 'string', BIGINT: 'bigint', DOUBLE: 'double', INTEGER: 'int', BOOLEAN: 'boolean', 'TIMESTAMP WITH TIME ZONE': 'timestamp', TIMESTAMP: 'timestamp', 'VARCHAR[]': 'array<string>' };
  return map[type] ?? type;
}
