import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { withCleanup } from './engines-util.js';
import { type FreezeWorker, freezeHarness } from './sdk-freeze-harness.js';
import { startStackProcess } from './stack-process.js';
import type { BenchResult } from './types.js';

/**
 * The Python SDK at its worst moments: the freeze harness against `npm start` (bench/sdk-freeze-harness.ts with the
 * worker bench/sdk_freeze_worker.py), kill -9 with the spool and the spool's caller cost (bench/sdk_spool_loss.py),
 * and its delivery throughput to `npm start` against a bare keep-alive client (bench/sdk_delivery.py).
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

/** The `sdk-python` rows of `npm run bench`. */
export async function runSdkPythonBench(): Promise<BenchResult[]> {
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  const delivery = await withCleanup(async (defer) => {
    const work = mkdtempSync(path.join(tmpdir(), 'bench-sdk-python-'));
    defer(() => rmSync(work, { recursive: true, force: true }));
    const stack = await startStackProcess(work, defer);
    return python('sdk_delivery.py', [stack.url, stack.apiKey, stack.description]);
  });
  return [...(await freezeHarness(PYTHON_FREEZE_WORKER)), ...python('sdk_spool_loss.py', []), ...delivery];
}
