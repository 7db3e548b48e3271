import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type Answer, TraceIngest, type Transport } from '../sdk/typescript/src/index.js';
import { median, round, withCleanup } from './engines-util.js';
import { DELIVERY_TRACES, type DeliveryContender, deliveryRow, measureDelivery, tracesWithin } from './sdk-delivery.js';
import { inFreshProcess } from './fresh-process.js';
import { runTypescriptSdkPromisesBench } from './sdk-freeze.js';
import { type StackProcess, startStackProcess } from './stack-process.js';
import { SPANS_PER_TRACE, sdkBenchTrace } from './sdk-workload.js';
import type { BenchResult } from './types.js';

/**
 * The client SDKs (docs/sdk.md): what tracing costs the caller, what a queued trace costs in
 * memory, and how fast one process delivers to the local stack compared with a bare HTTP client.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CALLER_TRACES = 500;
const CALLER_ROUNDS = 7;

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

/** A transport that sends with fetch and keeps each gzip body it sent (and its traces), for the bare client to send again. */
class KeepingTransport implements Transport {
  readonly bodies: { body: Uint8Array; count: number }[] = [];
  /** Called once the SDK's first request has been handed to fetch. */
  onFirstRequest: (() => void) | undefined;
  constructor(private readonly inner: Transport) {}
  async post(body: Uint8Array, headers: Record<string, string>): Promise<Answer> {
    const sending = this.inner.post(body, headers);
    const first = this.onFirstRequest;
    this.onFirstRequest = undefined;
    first?.();
    const answer = await sending;
    this.bodies.push({ body, count: (answer.body as { accepted?: number } | null)?.accepted ?? 0 });
    return answer;
  }
}

const seconds = () => Number(process.hrtime.bigint()) / 1e9;

/**
 * The bare client, a `fetch` loop on a thread of its own (a worker: its own event loop, so that neither waits for the
 * other's callbacks): `{ load }` takes the bodies; `{ go }` posts them again and again (saying `{ first }` once its
 * first request is handed to fetch) until `{ stop }`, then answers `{ requests: [start, end, traces][] }`.
 */
const BARE_CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const now = () => Number(process.hrtime.bigint()) / 1e9;
let bodies = [];
let stop = false;
parentPort.on('message', async (message) => {
  if (message.load) { bodies = message.load; parentPort.postMessage({ loaded: true }); return; }
  if (message.stop) { stop = true; return; }
  stop = false;
  const requests = [];
  while (!stop) {
    const { body, count } = bodies[requests.length % bodies.length];
    const started = now();
    const sending = fetch(workerData.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', 'X-API-Key': workerData.apiKey, 'Idempotency-Key': crypto.randomUUID() },
      body,
    });
    if (requests.length === 0) parentPort.postMessage({ first: true });
    const response = await sending;
    const answer = await response.json();
    if (response.status !== 200 || answer.accepted !== count) throw new Error('bare client: ' + response.status + ' ' + JSON.stringify(answer));
    requests.push([started, now(), count]);
  }
  parentPort.postMessage({ requests });
});
`;

/** The TypeScript SDK (background mode, `flush()`) in this process, and a bare `fetch` loop racing it on a worker thread. */
function typescriptContender(stack: StackProcess, FetchTransport: typeof import('../sdk/typescript/src/transport.js').FetchTransport, defer: (cleanup: () => unknown) => void): DeliveryContender {
  const worker = new Worker(BARE_CLIENT, { eval: true, workerData: { url: stack.url, apiKey: stack.apiKey } });
  defer(() => worker.terminate());
  const inbox: Record<string, unknown>[] = [];
  let waiting: (() => void) | undefined;
  let failed: unknown;
  worker.on('message', (message: Record<string, unknown>) => {
    inbox.push(message);
    waiting?.();
  });
  worker.on('error', (error) => {
    failed = error;
    waiting?.();
  });
  const receive = async <T>(key: string): Promise<T> => {
    for (;;) {
      if (failed !== undefined) throw failed;
      const at = inbox.findIndex((message) => key in message);
      if (at >= 0) return inbox.splice(at, 1)[0]?.[key] as T;
      await new Promise<void>((resolve) => (waiting = resolve));
    }
  };
  let client: TraceIngest | undefined;
  let transport: KeepingTransport | undefined;
  let loaded = false;
  return {
    async prepare() {
      transport = new KeepingTransport(new FetchTransport(stack.endpoints.api, 30_000));
      client = new TraceIngest({ apiKey: stack.apiKey, transport, flushIntervalMs: 3_600_000, maxQueueTraces: DELIVERY_TRACES });
      for (let n = 0; n < DELIVERY_TRACES; n++) sdkBenchTrace(client, n);
    },
    async race(first) {
      if (!client || !transport) throw new Error('prepare() first');
      if (loaded && first === 'bare') {
        worker.postMessage({ go: true });
        await receive('first');
      } else if (loaded) {
        transport.onFirstRequest = () => worker.postMessage({ go: true });
      }
      const started = seconds();
      const report = await client.flush();
      const ended = seconds();
      let bareTraces: number | undefined;
      if (loaded) {
        if (first === 'sdk') await receive('first');
        worker.postMessage({ stop: true });
        bareTraces = tracesWithin(await receive<[number, number, number][]>('requests'), started, ended);
      }
      await client.shutdown(0);
      if (report.sent !== DELIVERY_TRACES) throw new Error(`the SDK delivered ${JSON.stringify(report)}`);
      worker.postMessage({ load: transport.bodies });
      await receive('loaded');
      loaded = true;
      return { sdkSeconds: ended - started, bareTraces };
    },
    spans: () => SPANS_PER_TRACE,
  };
}

/** The delivery row, on a stack of its own. */
export async function typescriptDeliveryRows(): Promise<BenchResult[]> {
  return withCleanup(async (defer) => {
    const work = mkdtempSync(path.join(tmpdir(), 'bench-sdk-'));
    defer(() => rmSync(work, { recursive: true, force: true }));
    const stack = await startStackProcess(work, defer);
    const { FetchTransport } = await import('../sdk/typescript/src/transport.js');
    const measure = await measureDelivery(typescriptContender(stack, FetchTransport, defer));
    return [
      deliveryRow({
        group: 'sdk',
        language: 'typescript',
        sdk: 'background mode: batching, gzip of the next batch while one is in flight, Idempotency-Key, answers read and accounted',
        bare: 'a bare fetch loop on a worker thread',
        stack,
        measure,
      }),
    ];
  });
}

/** The SDK rows of `npm run bench`. */
export async function runSdkBench(): Promise<BenchResult[]> {
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  return [...(await callerCost()), memoryPerTrace(), ...(await typescriptDeliveryRows()), ...(await runTypescriptSdkPromisesBench())];
}
