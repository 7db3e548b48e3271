import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { composeIngest } from '../lambda/ingest/compose.js';
import { DynamoDbTenancyStore } from '../lambda/tenancy-store/dynamodb-tenancy-store.js';
import { type ApiKey, type Organization, generateApiKeySecret, overridesOf } from '../lambda/shared/domain/tenancy.js';
import { INGEST_ROUTE } from '../lambda/shared/service-constants.js';
import { createApiKey, createOrganization } from '../scripts/admin/commands.js';
import { startHttpGateway } from '../devkit/local-stack/http-gateway.js';
import { lambdaContext } from '../devkit/lambda/lambda-context.js';
import { startLocalStack } from '../devkit/local-stack/local-stack.js';
import { localPaths } from '../devkit/local-stack/local-state.js';
import { localClientConfig } from '../devkit/engines/provision.js';
import { round, withCleanup, within } from './engines-util.js';
import { realisticBatch } from './ingest-workload.js';
import type { BenchResult } from './types.js';

/**
 * End-to-end traces per second of the local stack over HTTP on the loopback interface: autocannon
 * (a separate process) posts realistic batches to the ingest route for a fixed time. The stack is
 * `npm start`'s own (`startLocalStack`, state in a temporary directory). Context measured in the same
 * run: the same load against the same ingest handler behind the same HTTP gateway, with AWS replaced
 * by in-memory no-ops: the handler's own ceiling on this machine with the engines out of the path.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CONNECTIONS = 10;
const DURATION_S = 8;
const BASELINE_DURATION_S = 4;
const WARMUP_S = 2;
const BATCH_SIZES = [10, 100] as const;
const BENCH_QUOTA = 1_000_000_000;
const AUTOCANNON = path.join(root, 'node_modules', 'autocannon', 'autocannon.js');

interface Target {
  url: string;
  apiKey: string;
  /** How the target runs, for the note. */
  description: string;
}

/** The fields of autocannon's `--json` report used here. */
interface AutocannonReport {
  requests: { average: number; total: number; sent: number };
  latency: { p50: number; p99: number; average: number };
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
}

/** Runs autocannon in its own process (so it does not share an event loop with the server under test). */
async function autocannon(target: Target, bodyFile: string, durationS: number, defer: (c: () => unknown) => void): Promise<AutocannonReport> {
  const args = [AUTOCANNON, '--json', '--no-progress', '-c', String(CONNECTIONS), '-d', String(durationS), '-t', '30', '-m', 'POST', '-i', bodyFile];
  args.push('-H', 'Content-Type=application/json', '-H', `X-API-Key=${target.apiKey}`, target.url);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  defer(() => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL'));
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

/** `npm start`'s stack, with a bench organization whose quotas never bind and the deployed key cache. */
async function startStack(work: string, defer: (c: () => unknown) => void): Promise<Target> {
  // The deployed function's key cache (30 s), rather than the local stack's default of 0.
  process.env.KEY_CACHE_SECONDS = '30';
  const stack = await startLocalStack({ paths: localPaths(path.join(work, 'state')), port: 0 });
  defer(() => stack.stop());
  const dynamodb = new DynamoDBClient(localClientConfig(stack.endpoints.dynamodb));
  defer(() => dynamodb.destroy());
  const admin = { store: new DynamoDbTenancyStore(dynamodb, stack.endpoints.tables.tenancy), now: () => new Date() };
  const quota = BENCH_QUOTA;
  await createOrganization(admin, 'bench', { overrides: { minute: quota, hour: quota, day: quota, month: quota } });
  const key = await createApiKey(admin, 'bench', { name: 'bench' });
  return {
    url: `${stack.endpoints.api}${INGEST_ROUTE.path}`,
    apiKey: key.api_key,
    description:
      `the local stack as npm start runs it (startLocalStack: ingest handler behind its HTTP gateway, DynamoDB Local, kinesalite, s3rver and ` +
      `the landing consumer polling the stream), state in a temporary directory, an org with ${BENCH_QUOTA} traces per window ` +
      `(all four windows counted), KEY_CACHE_SECONDS=30 as deployed`,
  };
}

/** The baseline: the same gateway and handler with AWS replaced by in-memory no-ops. */
async function startFakeAws(defer: (c: () => unknown) => void): Promise<Target> {
  const secret = generateApiKeySecret();
  const key: ApiKey = { keyId: secret.keyId, orgId: 'bench', workspaceSlug: null, status: 'active', name: 'bench', displayPrefix: '', createdAt: '' };
  const quotas = { minute: BENCH_QUOTA, hour: BENCH_QUOTA, day: BENCH_QUOTA, month: BENCH_QUOTA };
  const org: Organization = { orgId: 'bench', plan: 'bench', planStatus: 'active', billingStatus: 'ok', overrides: overridesOf(quotas), createdAt: '', updatedAt: '' };
  const handler = composeIngest({
    ports: {
      tenancy: { getApiKeyByHash: async () => key, getOrganization: async () => org, getPlan: async () => undefined, workspaceExists: async () => true },
      rateLimiter: { reserve: async () => ({ allowed: true }), release: async () => undefined },
      sink: { publish: async () => undefined },
      overflow: { put: async (k: string) => ({ bucket: 'b', key: k }), delete: async () => undefined },
    },
    idempotency: false,
    logger: new Logger({ serviceName: 'bench-ingest', logLevel: 'SILENT' }),
    metrics: new Metrics({ namespace: 'Bench', serviceName: 'bench-ingest' }),
  });
  const gateway = await startHttpGateway({ port: 0, handler: (event) => handler(event, lambdaContext({ frozen: true })) });
  defer(() => gateway.stop());
  return {
    url: `${gateway.url}${INGEST_ROUTE.path}`,
    apiKey: secret.secret,
    description: 'the same ingest handler with in-memory AWS no-ops behind the same HTTP gateway, in the same process',
  };
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
  if (parsed.accepted !== traces) throw new Error(`${target.url} refused the bench batch (${response.status}): ${text.slice(0, 300)}`);
}

/** Local-stack traces/s over HTTP under concurrent load, 10 and 100 traces per request. */
export async function runLocalStackBench(): Promise<BenchResult[]> {
  // Metrics are flushed once per request; keep their EMF lines off the bench output.
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
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

    const stack = await startStack(work, defer);
    const fakes = await startFakeAws(defer);

    const results: BenchResult[] = [];
    for (const [i, { size, body, file }] of bodies.entries()) {
      await preflight(stack, body, size);
      await preflight(fakes, body, size);
      if (i === 0) {
        await autocannon(stack, file, WARMUP_S, defer);
        await autocannon(fakes, file, WARMUP_S, defer);
      }
      const measured = await autocannon(stack, file, DURATION_S, defer);
      const baseline = await autocannon(fakes, file, BASELINE_DURATION_S, defer);
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
            `${(Buffer.byteLength(body) / 1024).toFixed(0)} KiB of JSON per request (bench/ingest-workload.ts realisticBatch, 8 spans per trace, uncompressed); ` +
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
