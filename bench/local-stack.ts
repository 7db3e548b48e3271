import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { S3Client } from '@aws-sdk/client-s3';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { composeIngest } from '../lambda/ingest/compose.js';
import { DynamoDbTenancyStore } from '../lambda/shared/adapters/dynamodb-tenancy-store.js';
import { type ApiKey, type Organization, generateApiKeySecret } from '../lambda/shared/domain/tenancy.js';
import { freePort, startDynamoDbLocal, startKinesalite, startS3rver } from '../scripts/local/engines.js';
import { createBucket, createStream, createTables, localClientConfig } from '../scripts/local/provision.js';
import { round, sleep, withCleanup, within } from './engines-util.js';
import { realisticBatch } from './ingest.js';
import type { BenchResult } from './types.js';

/**
 * End-to-end traces per second of the local stack over HTTP on the loopback interface: autocannon
 * (a separate process) posts realistic batches to `POST /v1/traces/ingest` for a fixed time. Context
 * measured in the same run: the same load against the same handler behind a minimal HTTP adapter in the
 * bench process, with AWS replaced by in-memory no-ops: the handler's own ceiling on this machine with
 * the engines out of the path. Runs scripts/local/start.ts when it exists; otherwise (or with
 * BENCH_LOCAL_STACK=in-process) the same handler and engines in the bench process.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const HOST = '127.0.0.1';
const CONNECTIONS = 10;
const DURATION_S = 8;
const BASELINE_DURATION_S = 4;
const WARMUP_S = 2;
const BATCH_SIZES = [10, 100] as const;
const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 5_000;
const INGEST_PATH = '/v1/traces/ingest';

interface Target {
  url: string;
  apiKey: string;
  /** How the stack was run, for the note. */
  description: string;
  stop(): Promise<void>;
}

/** The fields of autocannon's `--json` report used here. */
interface AutocannonReport {
  requests: { average: number; total: number; sent: number };
  latency: { p50: number; p99: number; average: number };
  throughput: { average: number };
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
}

const AUTOCANNON = path.join(root, 'node_modules', 'autocannon', 'autocannon.js');

/** Runs autocannon in its own process (so it does not share an event loop with a server under test). */
async function autocannon(url: string, bodyFile: string, headers: Record<string, string>, durationS: number, defer: (c: () => unknown) => void): Promise<AutocannonReport> {
  const args = [AUTOCANNON, '--json', '--no-progress', '-c', String(CONNECTIONS), '-d', String(durationS), '-t', '30', '-m', 'POST', '-i', bodyFile];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}=${value}`);
  args.push(url);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  defer(() => killChild(child));
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-2_000)));
  const code = await within(
    new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (exitCode) => resolve(exitCode));
    }),
    (durationS + 30) * 1000,
    'autocannon did not finish in time',
  );
  if (code !== 0) throw new Error(`autocannon exited with ${code}: ${stderr.trim()}`);
  return JSON.parse(stdout) as AutocannonReport;
}

function killChild(child: ChildProcess): void {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

async function listen(server: Server, port = 0): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, HOST, () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

// ---------------------------------------------------------------------------------------------
// In-process stack: the engines and the real handler composed as in lambda/ingest/handler.ts, behind
// a Node HTTP server that builds API Gateway (REST, binary media type */*) events.
// ---------------------------------------------------------------------------------------------

function toGatewayEvent(req: IncomingMessage, body: Buffer): APIGatewayProxyEvent {
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] as string;
    const value = req.rawHeaders[i + 1] as string;
    headers[name] = value;
    (multiValueHeaders[name] ??= []).push(value);
  }
  const url = new URL(req.url ?? '/', `http://${HOST}`);
  return {
    resource: INGEST_PATH,
    path: url.pathname,
    httpMethod: req.method ?? 'GET',
    headers,
    multiValueHeaders,
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: null,
    stageVariables: null,
    // binaryMediaTypes ['*/*'] on the real API: every body arrives base64-encoded.
    body: body.length > 0 ? body.toString('base64') : null,
    isBase64Encoded: body.length > 0,
    requestContext: { requestId: randomUUID() } as APIGatewayProxyEvent['requestContext'],
  };
}

const lambdaContext = {
  callbackWaitsForEmptyEventLoop: false,
  functionName: 'bench-ingest',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:bench-ingest',
  memoryLimitInMB: '1024',
  awsRequestId: 'bench',
  logGroupName: '/aws/lambda/bench-ingest',
  logStreamName: 'bench',
  getRemainingTimeInMillis: () => 30_000,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
};

type IngestHandler = ReturnType<typeof composeIngest>;

/** Powertools Metrics writes one EMF line per request to stdout unless disabled when it is created. */
function quietMetrics(): Metrics {
  const previous = process.env['POWERTOOLS_METRICS_DISABLED'];
  process.env['POWERTOOLS_METRICS_DISABLED'] = 'true';
  try {
    return new Metrics({ namespace: 'Bench', serviceName: 'bench-ingest' });
  } finally {
    if (previous === undefined) delete process.env['POWERTOOLS_METRICS_DISABLED'];
    else process.env['POWERTOOLS_METRICS_DISABLED'] = previous;
  }
}

const quietLogger = () => new Logger({ serviceName: 'bench-ingest', logLevel: 'SILENT' });

/** Serves a handler on loopback the way API Gateway invokes it: one event per request. */
async function serveHandler(handler: IngestHandler, defer: (c: () => unknown) => void): Promise<string> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        let result: APIGatewayProxyResult;
        if (req.method !== 'POST' || !req.url?.startsWith(INGEST_PATH)) {
          result = { statusCode: 404, headers: { 'Content-Type': 'application/json' }, body: '{"detail":"Not found"}' };
        } else {
          result = (await handler(toGatewayEvent(req, Buffer.concat(chunks)), lambdaContext)) as APIGatewayProxyResult;
        }
        const headers = Object.fromEntries(Object.entries(result.headers ?? {}).map(([k, v]) => [k, String(v)]));
        res.writeHead(result.statusCode, headers).end(result.body);
      })().catch(() => res.writeHead(500).end());
    });
  });
  const port = await listen(server);
  defer(() => closeServer(server));
  return `http://${HOST}:${port}${INGEST_PATH}`;
}

const GENEROUS = 1e12;

/** The baseline: the same HTTP adapter and handler with AWS replaced by in-memory no-ops. */
async function startFakeAwsServer(defer: (c: () => unknown) => void): Promise<Target> {
  const secret = generateApiKeySecret();
  const key: ApiKey = { keyId: secret.keyId, orgId: 'bench', workspaceSlug: null, status: 'active', name: 'bench', displayPrefix: '', createdAt: '' };
  const org: Organization = {
    orgId: 'bench', plan: 'bench', planStatus: 'active', billingStatus: 'ok',
    quotas: { minute: GENEROUS, hour: GENEROUS, day: GENEROUS, month: GENEROUS }, createdAt: '', updatedAt: '',
  };
  const handler = composeIngest({
    ports: {
      tenancy: { getApiKeyByHash: async () => key, getOrganization: async () => org, workspaceExists: async () => true },
      rateLimiter: { reserve: async () => ({ allowed: true }), release: async () => undefined },
      sink: { publish: async () => undefined },
      overflow: { put: async (k: string) => ({ bucket: 'b', key: k }) },
    },
    idempotency: false,
    logger: quietLogger(),
    metrics: quietMetrics(),
  });
  return {
    url: await serveHandler(handler, defer),
    apiKey: secret.secret,
    description: 'the same ingest handler with in-memory AWS no-ops, behind a minimal HTTP adapter in the bench process',
    stop: async () => undefined,
  };
}

async function startInProcessStack(defer: (c: () => unknown) => void): Promise<Target> {
  const [dynamoEngine, kinesisEngine, s3Engine] = await Promise.all([startDynamoDbLocal(), startKinesalite(), startS3rver()]);
  defer(() => Promise.all([dynamoEngine.stop(), kinesisEngine.stop(), s3Engine.stop()]));
  const dynamodb = new DynamoDBClient({ ...localClientConfig(dynamoEngine.endpoint), maxAttempts: 3 });
  const kinesis = new KinesisClient({ ...localClientConfig(kinesisEngine.endpoint), maxAttempts: 3 });
  const s3 = new S3Client({ ...localClientConfig(s3Engine.endpoint), maxAttempts: 3 });
  defer(() => [dynamodb, kinesis, s3].forEach((client) => client.destroy()));
  const tables = { tenancy: 'bench-tenancy', rate: 'bench-rate' };
  const stream = 'bench-traces';
  const bucket = 'bench-data';
  await Promise.all([createTables(dynamodb, tables), createStream(kinesis, stream, 2), createBucket(s3, bucket)]);

  const store = new DynamoDbTenancyStore(dynamodb, tables.tenancy);
  const orgId = 'bench-local-stack';
  const now = new Date().toISOString();
  await store.putOrganization(
    {
      orgId,
      plan: 'bench',
      planStatus: 'active',
      billingStatus: 'ok',
      quotas: { minute: GENEROUS, hour: GENEROUS, day: GENEROUS, month: GENEROUS },
      createdAt: now,
      updatedAt: now,
    },
    { createOnly: true },
  );
  const secret = generateApiKeySecret();
  await store.putApiKey(
    { keyId: secret.keyId, orgId, workspaceSlug: null, status: 'active', name: 'bench', displayPrefix: secret.displayPrefix, createdAt: now },
    secret.secretHash,
  );

  const handler = composeIngest({
    resources: { tenancyTable: tables.tenancy, rateTable: tables.rate, traceStream: stream, dataBucket: bucket },
    clients: { dynamodb, kinesis, s3 },
    logger: quietLogger(),
    metrics: quietMetrics(),
  });
  return {
    url: await serveHandler(handler, defer),
    apiKey: secret.secret,
    description:
      'in-process fallback: the real ingest handler and adapters (composed as lambda/ingest/handler.ts, logs and metrics off) behind a Node HTTP server ' +
      'in the bench process, with DynamoDB Local (JVM child), kinesalite (2 shards) and s3rver in that same process',
    stop: async () => undefined,
  };
}

// ---------------------------------------------------------------------------------------------
// The local stack as `npm start` runs it: scripts/local/start.ts in its own process group, state in
// a temporary directory, a bench organization with generous quotas and its key made by the admin CLI.
// ---------------------------------------------------------------------------------------------

const START_SCRIPT = path.join(root, 'scripts', 'local', 'start.ts');
const ADMIN_CLI = path.join(root, 'scripts', 'admin', 'cli.ts');
const TSX_CLI = path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs');
/** Environment variable naming the local stack's state directory (scripts/local/local-state.ts). */
const LOCAL_DIR_ENV = 'TRACE_INGEST_LOCAL_DIR';
const BENCH_QUOTA = '1000000000';

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // Already gone.
  }
}

async function waitFor(condition: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await sleep(100);
  }
  return condition();
}

/**
 * Stops a process group started with `detached: true`: SIGTERM to its leader (a graceful stop of the
 * stack), then SIGTERM and finally SIGKILL to whatever of the group is left (the DynamoDB Local JVM,
 * tsx's node child). Resolves once no process of the group remains.
 */
async function stopGroup(child: ChildProcess): Promise<void> {
  const pgid = child.pid;
  if (pgid === undefined) return;
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
    await waitFor(() => child.exitCode !== null || child.signalCode !== null, STOP_GRACE_MS * 2);
  }
  if (!groupAlive(pgid)) return;
  signalGroup(pgid, 'SIGTERM');
  if (await waitFor(() => !groupAlive(pgid), STOP_GRACE_MS)) return;
  signalGroup(pgid, 'SIGKILL');
  if (!(await waitFor(() => !groupAlive(pgid), STOP_GRACE_MS))) throw new Error(`processes of group ${pgid} survived SIGKILL`);
}

/** Runs a tsx script to completion and returns its stdout. */
async function runTsx(script: string, args: string[], env: NodeJS.ProcessEnv, defer: (c: () => unknown) => void): Promise<string> {
  const child = spawn(process.execPath, [TSX_CLI, script, ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  defer(() => stopGroup(child));
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-2_000)));
  const code = await within(
    new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (exitCode) => resolve(exitCode));
    }),
    60_000,
    `${path.basename(script)} ${args.join(' ')} did not finish in time`,
  );
  if (code !== 0) throw new Error(`${path.basename(script)} ${args.join(' ')} exited with ${code}: ${stderr.trim()}`);
  return stdout;
}

async function startSpawnedStack(work: string, defer: (c: () => unknown) => void): Promise<Target> {
  const stateDir = path.join(work, 'state');
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    [LOCAL_DIR_ENV]: stateDir,
    // The deployed function's key cache (30 s), rather than the local stack's default of 0.
    KEY_CACHE_SECONDS: '30',
    POWERTOOLS_LOG_LEVEL: 'WARN',
    POWERTOOLS_METRICS_DISABLED: 'true',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
  // Its own process group, so the stack and everything it starts can be stopped at once.
  const child = spawn(process.execPath, [TSX_CLI, START_SCRIPT], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-4_000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  // Last resort should the bench itself die: a detached group would otherwise outlive it.
  const onExit = () => child.pid !== undefined && signalGroup(child.pid, 'SIGKILL');
  const onSignal = (signal: NodeJS.Signals) => {
    onExit();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('exit', onExit);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  defer(async () => {
    try {
      await stopGroup(child);
    } finally {
      process.removeListener('exit', onExit);
      process.removeListener('SIGINT', onSignal);
      process.removeListener('SIGTERM', onSignal);
    }
  });

  const endpointsFile = path.join(stateDir, 'endpoints.json');
  try {
    await within(
      waitFor(() => {
        if (child.exitCode !== null || child.signalCode !== null) return true;
        return existsSync(endpointsFile);
      }, READY_TIMEOUT_MS),
      READY_TIMEOUT_MS + 5_000,
      'local stack start timed out',
    );
    if (!existsSync(endpointsFile)) {
      throw new Error(
        child.exitCode !== null || child.signalCode !== null
          ? `local stack exited (${child.exitCode ?? child.signalCode}) before writing ${endpointsFile}`
          : `local stack did not write ${endpointsFile} within ${READY_TIMEOUT_MS / 1000}s`,
      );
    }
    const api = (JSON.parse(readFileSync(endpointsFile, 'utf8')) as { api: string }).api;
    const url = `${api.replace(/\/+$/, '')}${INGEST_PATH}`;
    await waitUntilAnswering(url, child);

    await runTsx(ADMIN_CLI, ['org', 'create', '--org', 'bench', '--plan', 'bench', ...['--per-minute', '--per-hour', '--per-day', '--per-month'].flatMap((o) => [o, BENCH_QUOTA])], env, defer);
    const key = JSON.parse(await runTsx(ADMIN_CLI, ['key', 'create', '--org', 'bench', '--name', 'bench'], env, defer)) as { api_key?: string };
    if (!key.api_key) throw new Error('admin CLI printed no api_key');
    return {
      url,
      apiKey: key.api_key,
      description:
        `the local stack as npm start runs it (scripts/local/start.ts in a child process: ingest handler behind its HTTP gateway, DynamoDB Local, ` +
        `kinesalite, s3rver and the landing consumer polling the stream), state in a temporary directory, an org with ${BENCH_QUOTA} traces per window ` +
        `(all four windows counted), KEY_CACHE_SECONDS=30 as deployed`,
      stop: () => stopGroup(child),
    };
  } catch (error) {
    throw new Error(`local stack failed to start: ${(error as Error).message}\n${output.trim().split('\n').slice(-10).join('\n')}`, { cause: error });
  }
}

// ---------------------------------------------------------------------------------------------

async function waitUntilAnswering(url: string, child?: ChildProcess): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child && (child.exitCode !== null || child.signalCode !== null)) throw new Error(`local stack exited before answering (${child.exitCode ?? child.signalCode})`);
    try {
      const response = await fetch(url, { method: 'POST', body: '{}', signal: AbortSignal.timeout(2_000) });
      await response.arrayBuffer();
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`local stack did not answer on ${url} within ${READY_TIMEOUT_MS / 1000}s`);
    }
    await sleep(250);
  }
}

/** One request checked by hand before the load: every trace of the body must be accepted. */
async function preflight(target: Target, body: string, traces: number): Promise<void> {
  const response = await fetch(target.url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-API-Key': target.apiKey },
    body,
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  const parsed = response.status === 200 ? (JSON.parse(text) as { accepted?: number }) : {};
  if (parsed.accepted !== traces) throw new Error(`local stack refused the bench batch (${response.status}): ${text.slice(0, 300)}`);
}

/** Local-stack traces/s over HTTP under concurrent load, 10 and 100 traces per request. */
export async function runLocalStackBench(): Promise<BenchResult[]> {
  return withCleanup(async (defer) => {
    const work = mkdtempSync(path.join(tmpdir(), 'bench-local-stack-'));
    defer(() => rmSync(work, { recursive: true, force: true }));

    const loadAverage = loadavg()[0]?.toFixed(1) ?? '?';
    const all = (JSON.parse(realisticBatch()) as { traces: unknown[] }).traces;
    const bodies = BATCH_SIZES.map((size) => {
      const body = JSON.stringify({ traces: all.slice(0, size) });
      const file = path.join(work, `batch-${size}.json`);
      writeFileSync(file, body);
      return { size, body, file };
    });

    const stack = existsSync(START_SCRIPT) && process.env['BENCH_LOCAL_STACK'] !== 'in-process'
      ? await startSpawnedStack(work, defer)
      : await startInProcessStack(defer);
    const fakes = await startFakeAwsServer(defer);
    const headersFor = (target: Target) => ({ 'Content-Type': 'application/json', 'X-API-Key': target.apiKey });

    const results: BenchResult[] = [];
    for (const [i, { size, body, file }] of bodies.entries()) {
      await preflight(stack, body, size);
      await preflight(fakes, body, size);
      if (i === 0) {
        await autocannon(stack.url, file, headersFor(stack), WARMUP_S, defer);
        await autocannon(fakes.url, file, headersFor(fakes), WARMUP_S, defer);
      }
      const measured = await autocannon(stack.url, file, headersFor(stack), DURATION_S, defer);
      const baseline = await autocannon(fakes.url, file, headersFor(fakes), BASELINE_DURATION_S, defer);
      const okPerSecond = measured['2xx'] / measured.duration;
      const tracesPerSecond = okPerSecond * size;
      const baselineTracesPerSecond = (baseline['2xx'] / baseline.duration) * size;
      const label = `${size} traces/request, ${CONNECTIONS} connections, ${DURATION_S} s`;
      const versus = `baseline: ${fakes.description}, same body, same load, same run (${BASELINE_DURATION_S} s)`;
      results.push(
        {
          group: 'local-stack',
          metric: `end-to-end traces/s over HTTP (${label})`,
          value: round(tracesPerSecond),
          unit: 'traces/s',
          baseline: round(baselineTracesPerSecond),
          ratio: round(tracesPerSecond / baselineTracesPerSecond, 2),
          note:
            `${stack.description}; autocannon in its own process on loopback, same machine (${cpus().length} CPUs, load average ${loadAverage} ` +
            `when the bench started). ` +
            `${(Buffer.byteLength(body) / 1024).toFixed(0)} KiB of JSON per request (bench/ingest.ts realisticBatch, 8 spans per trace, uncompressed); ` +
            `every trace accepted (checked on one request first). Ratio = traces/s ÷ the ${versus}, i.e. the share of the handler's own ` +
            `ceiling left once the emulated engines are in the path`,
        },
        {
          group: 'local-stack',
          metric: `requests/s (${label})`,
          value: round(okPerSecond, 1),
          unit: 'requests/s',
          baseline: round(baseline['2xx'] / baseline.duration, 1),
          note: `2xx responses ÷ duration; ${measured['2xx']} of ${measured.requests.sent} sent (the rest still in flight at the end); ${versus}`,
        },
        { group: 'local-stack', metric: `latency p50 (${label})`, value: measured.latency.p50, unit: 'ms', baseline: baseline.latency.p50, note: versus },
        { group: 'local-stack', metric: `latency p99 (${label})`, value: measured.latency.p99, unit: 'ms', baseline: baseline.latency.p99, note: versus },
        {
          group: 'local-stack',
          metric: `non-2xx responses and errors (${label})`,
          value: measured.non2xx + measured.errors + measured.timeouts,
          unit: 'requests',
          note: `non-2xx ${measured.non2xx}, connection errors ${measured.errors}, timeouts ${measured.timeouts}`,
        },
      );
    }
    return results;
  });
}
