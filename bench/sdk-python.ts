import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { withCleanup } from './engines-util.js';
import { startStackProcess } from './stack-process.js';
import type { BenchResult } from './types.js';

/**
 * The Python SDK at its worst moments (bench/sdk_freeze.py: freezes, kill -9 with the spool, the
 * spool's caller cost) and its delivery throughput to `npm start` against a bare keep-alive client
 * (bench/sdk_delivery.py). `npm run bench -- sdk sdk-python` measures both SDKs in one run.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function python(script: string, args: string[]): BenchResult[] {
  const run = spawnSync('python3', [path.join(root, 'bench', script), ...args], {
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: path.join(root, 'sdk', 'python', 'src') },
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
  return [...python('sdk_freeze.py', []), ...delivery];
}
