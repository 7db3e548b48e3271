import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Answer, TraceIngest, type Transport } from '../sdk/typescript/src/index.js';
import { round, withCleanup } from './engines-util.js';
import { inFreshProcess } from './fresh-process.js';
import { runTypescriptSdkPromisesBench } from './sdk-freeze.js';
import { startStackProcess } from './stack-process.js';
import { SPANS_PER_TRACE, sdkBenchTrace } from './sdk-workload.js';
import type { BenchResult } from './types.js';

/**
 * The client SDKs (docs/sdk.md): what tracing costs the caller, what a queued trace costs in
 * memory, and how fast one process delivers to the local stack compared with a bare HTTP client.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CALLER_TRACES = 500;
const CALLER_ROUNDS = 7;
const DELIVERY_TRACES = 5_000;
const DELIVERY_ROUNDS = 3;

const accepted: Transport = { post: async (): Promise<Answer> => ({ status: 200, headers: {}, body: { accepted: 0, rejected: 0, errors: [] } }) };

/** The same calls as the SDK's API with nothing behind them: the cost of the callbacks alone. */
const noop = {
  trace<R>(_name: string, _options: unknown, fn: (trace: { span: typeof noopSpan }) => R): R {
    return fn({ span: noopSpan });
  },
};
function noopSpan<R>(_name: string, _options: unknown, fn: (span: { output?: unknown; inputTokens?: number; outputTokens?: number }) => R): R {
  return fn({});
}

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

async function microsPerSpan(client: Pick<TraceIngest, 'trace'>, between: () => Promise<unknown>): Promise<number> {
  const samples: number[] = [];
  for (let round = 0; round < CALLER_ROUNDS; round++) {
    const started = performance.now();
    for (let n = 0; n < CALLER_TRACES; n++) sdkBenchTrace(client, n);
    samples.push(((performance.now() - started) * 1000) / (CALLER_TRACES * SPANS_PER_TRACE));
    await between();
  }
  return median(samples);
}

async function callerCost(): Promise<BenchResult[]> {
  const sdk = new TraceIngest({ apiKey: 'tik_bench', transport: accepted, serverless: true, maxQueueTraces: CALLER_TRACES * 2 });
  const sdkMicros = await microsPerSpan(sdk, () => sdk.flush());
  const noopMicros = await microsPerSpan(noop as unknown as Pick<TraceIngest, 'trace'>, async () => undefined);
  const python = spawnSync('python3', [path.join(root, 'bench', 'sdk_caller_cost.py')], {
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: path.join(root, 'sdk', 'python', 'src') },
  });
  if (python.status !== 0) throw new Error(`bench/sdk_caller_cost.py failed: ${python.stderr}`);
  const py = JSON.parse(python.stdout.trim().split('\n').pop() as string) as { sdk_us: number; noop_us: number };
  const workload = `${SPANS_PER_TRACE} spans per trace with JSON input and output, tokens, model and tags; median of ${CALLER_ROUNDS} rounds of ${CALLER_TRACES} traces`;
  return [
    {
      group: 'sdk',
      metric: 'typescript: caller cost per span (trace and span callbacks, serialising and queueing)',
      value: round(sdkMicros, 2),
      unit: 'µs',
      baseline: round(noopMicros, 3),
      note: `${workload}; the trace is serialised and queued when it ends, on the caller's time. Baseline: the same callbacks on a no-op object. Sending (serverless flush to a transport that answers at once) between rounds, not timed`,
    },
    {
      group: 'sdk',
      metric: 'Python: caller cost per span (context managers, serialising and queueing)',
      value: round(py.sdk_us, 2),
      unit: 'µs',
      baseline: round(py.noop_us, 3),
      note: `${workload}; python3 ${process.env.PYTHON_VERSION ?? ''} with the package from sdk/python/src. Baseline: the same with blocks on no-op context managers`,
    },
  ];
}

function memoryPerTrace(): BenchResult {
  const { bytesPerTrace, traces } = inFreshProcess<{ bytesPerTrace: number; traces: number }>('bench/sdk-memory.ts', [], ['--expose-gc']);
  return {
    group: 'sdk',
    metric: 'typescript: memory per queued trace',
    value: round(bytesPerTrace / 1024, 2),
    unit: 'KiB',
    note: `heap + array buffers after gc, ${traces} queued traces of ${SPANS_PER_TRACE} spans (bench/sdk-memory.ts, a fresh process), ÷ traces; a queued trace is its serialised JSON and its id`,
  };
}

/** A transport that sends with fetch and keeps each gzip body it sent, for the bare client to send again. */
class KeepingTransport implements Transport {
  readonly bodies: Uint8Array[] = [];
  constructor(private readonly inner: Transport) {}
  async post(body: Uint8Array, headers: Record<string, string>): Promise<Answer> {
    this.bodies.push(body);
    return this.inner.post(body, headers);
  }
}

async function deliveryThroughput(): Promise<BenchResult[]> {
  return withCleanup(async (defer) => {
    const work = mkdtempSync(path.join(tmpdir(), 'bench-sdk-'));
    defer(() => rmSync(work, { recursive: true, force: true }));
    const loadAverage = loadavg()[0]?.toFixed(1) ?? '?';
    const stack = await startStackProcess(work, defer);
    const baseUrl = stack.endpoints.api;
    const { FetchTransport } = await import('../sdk/typescript/src/transport.js');
    const sdkRates: number[] = [];
    const bareRates: number[] = [];
    for (let round = 0; round < DELIVERY_ROUNDS; round++) {
      const transport = new KeepingTransport(new FetchTransport(baseUrl, 30_000));
      const client = new TraceIngest({ apiKey: stack.apiKey, transport, flushIntervalMs: 3_600_000, maxQueueTraces: DELIVERY_TRACES });
      for (let n = 0; n < DELIVERY_TRACES; n++) sdkBenchTrace(client, n);
      const started = performance.now();
      const report = await client.flush();
      const sdkSeconds = (performance.now() - started) / 1000;
      await client.shutdown(0);
      if (report.sent !== DELIVERY_TRACES) throw new Error(`the SDK delivered ${JSON.stringify(report)}`);
      sdkRates.push(DELIVERY_TRACES / sdkSeconds);

      const bareStarted = performance.now();
      for (const body of transport.bodies) {
        const response = await fetch(stack.url, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', 'X-API-Key': stack.apiKey, 'Idempotency-Key': crypto.randomUUID() },
          body,
        });
        const answer = (await response.json()) as { accepted?: number };
        if (response.status !== 200 || answer.accepted === undefined) throw new Error(`bare client: ${response.status}`);
      }
      bareRates.push(DELIVERY_TRACES / ((performance.now() - bareStarted) / 1000));
    }
    const sdk = median(sdkRates);
    const bare = median(bareRates);
    return [
      {
        group: 'sdk',
        metric: `typescript: deliver, one process's throughput to the local stack ÷ a bare keep-alive client (${DELIVERY_TRACES} traces of ${SPANS_PER_TRACE} spans)`,
        value: round(sdk),
        unit: 'traces/s',
        baseline: round(bare),
        ratio: round(sdk / bare, 2),
        target: '>= 0.9',
        note:
          `from flush() to the last answer, traces queued beforehand: batching, gzip, Idempotency-Key, answers read and accounted. Baseline: a bare fetch ` +
          `loop posting the same gzip bodies one after another (with a fresh Idempotency-Key each, as the SDK sends one), same stack, same run; ` +
          `median of ${DELIVERY_ROUNDS} alternating rounds. ${stack.description}; ${cpus().length} CPUs, load average ${loadAverage} when it started`,
      },
    ];
  });
}

/** The SDK rows of `npm run bench`. */
export async function runSdkBench(): Promise<BenchResult[]> {
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  return [...(await callerCost()), memoryPerTrace(), ...(await deliveryThroughput()), ...(await runTypescriptSdkPromisesBench())];
}
