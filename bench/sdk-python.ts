import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stdoutLines, withCleanup } from './engines-util.js';
import { DELIVERY_TRACES, type DeliveryContender, deliveryRow, measureDelivery } from './sdk-delivery.js';
import { type FreezeWorker, freezeHarness } from './sdk-freeze-harness.js';
import { type StackProcess, startStackProcess } from './stack-process.js';
import type { BenchResult } from './types.js';

/**
 * The Python SDK at its worst moments: the freeze harness against `npm start` (bench/sdk-freeze-harness.ts with the
 * worker bench/sdk_freeze_worker.py), kill -9 with the spool and the spool's caller cost (bench/sdk_spool_loss.py),
 * and its delivery throughput to `npm start` against a bare keep-alive client (bench/sdk-delivery.ts's rounds, with
 * bench/sdk_delivery.py as the Python contender).
 * `npm run bench -- sdk sdk-python` measures both SDKs in one run.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PYTHON_ENV = { PYTHONPATH: path.join(root, 'sdk', 'python', 'src') };

export const PYTHON_FREEZE_WORKER: FreezeWorker = {
  language: 'Python',
  group: 'sdk-python',
  command: 'python3',
  args: ['bench/sdk_freeze_worker.py'],
  env: PYTHON_ENV,
  description: 'client.wrap_handler (serverless=True, spool_sync="write")',
};

function python(script: string, args: string[]): BenchResult[] {
  const run = spawnSync('python3', [path.join(root, 'bench', script), ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...PYTHON_ENV },
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
  if (run.status !== 0) throw new Error(`bench/${script} failed with status ${run.status}`);
  return JSON.parse(run.stdout.trim().split('\n').pop() as string) as BenchResult[];
}

/** The Python SDK (serverless `flush()`) and a bare `http.client` loop racing it, in Python processes (bench/sdk_delivery.py). */
function pythonContender(stack: StackProcess, defer: (cleanup: () => unknown) => void): DeliveryContender {
  const child = spawn('python3', [path.join(root, 'bench', 'sdk_delivery.py'), stack.url, stack.apiKey, String(DELIVERY_TRACES)], {
    env: { ...process.env, ...PYTHON_ENV },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  defer(() => child.exitCode === null && child.kill('SIGKILL'));
  const lines = stdoutLines(child);
  let spans = 0;
  const ask = async <T>(command: string): Promise<T> => {
    child.stdin?.write(`${command}\n`);
    const line = await lines.next();
    if (line.done) throw new Error(`bench/sdk_delivery.py ended at "${command}" (exit ${child.exitCode})`);
    return JSON.parse(line.value) as T;
  };
  return {
    prepare: async () => void (spans = (await ask<{ spans: number }>('prepare')).spans),
    race: async (first) => {
      const answer = await ask<{ sdk_seconds: number; bare_traces: number | null }>(`race ${first}`);
      return { sdkSeconds: answer.sdk_seconds, bareTraces: answer.bare_traces ?? undefined };
    },
    spans: () => spans,
  };
}

/** The delivery row, on a stack of its own. */
export function pythonDeliveryRow(): Promise<BenchResult> {
  return withCleanup(async (defer) => {
    const work = mkdtempSync(path.join(tmpdir(), 'bench-sdk-python-'));
    defer(() => rmSync(work, { recursive: true, force: true }));
    const stack = await startStackProcess(work, defer);
    const measure = await measureDelivery(pythonContender(stack, defer));
    return deliveryRow({
      group: 'sdk-python',
      language: 'Python',
      sdk: 'serverless flush: batching, gzip of the next batch while one is in flight, Idempotency-Key, answers read and accounted',
      bare: 'a bare http.client keep-alive loop in a process of its own',
      stack,
      measure,
    });
  });
}

/** The `sdk-python` rows of `npm run bench`. */
export async function runSdkPythonBench(): Promise<BenchResult[]> {
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  return [...(await freezeHarness(PYTHON_FREEZE_WORKER)), ...python('sdk_spool_loss.py', []), await pythonDeliveryRow()];
}
