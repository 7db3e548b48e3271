import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { TraceIngest } from '../sdk/typescript/src/index.js';
import { exited, percentile, round, stdoutLines, withCleanup } from './engines-util.js';
import { type FreezeWorker, freezeHarness } from './sdk-freeze-harness.js';
import { inFreshProcess } from './fresh-process.js';
import { SPANS_PER_TRACE } from './sdk-workload.js';
import type { BenchResult } from './types.js';

/**
 * The TypeScript SDK's promises at their worst moments (docs/sdk.md): the freeze harness against `npm start`
 * (bench/sdk-freeze-harness.ts, shared with the Python SDK), the spool's loss window under kill -9, and what the spool
 * costs the caller. The loss window alone runs against an in-process stand-in for the service that keeps the service's
 * idempotency (a key already stored gets its answer again, its traces are not stored twice): it measures the SDK's
 * spool (what a new client on a killed child's directory could deliver), which the stand-in counts exactly and at
 * once after each of the 40 kills, where the stack would need a landing and a compaction per kill.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SPOOL_KILLS = 20;
const SPOOL_INTERVAL_MS = 100;

/** Stores each key's traces once, as the service does; answers after `delayMs`. */
class IdempotentService {
  readonly stored = new Map<string, string[]>();
  url = '';
  private readonly server: Server;

  constructor(delayMs: () => number) {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const { traces } = JSON.parse(gunzipSync(Buffer.concat(chunks)).toString('utf8')) as { traces: { trace_id: string }[] };
        const key = String(request.headers['idempotency-key']);
        if (!this.stored.has(key)) this.stored.set(key, traces.map((trace) => trace.trace_id));
        setTimeout(() => response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ accepted: traces.length, rejected: 0, errors: [] })), delayMs());
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Times each trace id was stored, under distinct keys. */
  counts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const ids of this.stored.values()) for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
    return counts;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

function tsx(script: string, args: string[]): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] });
}

/** Kills a child handing traces over at 20 random moments per setting and counts what the next client could not deliver. */
async function spoolLoss(): Promise<BenchResult[]> {
  return withCleanup(async (defer) => {
    const service = await new IdempotentService(() => 2 + Math.random() * 20).start();
    defer(() => service.close());
    const rows: BenchResult[] = [];
    for (const sync of ['interval', 'write'] as const) {
      let lost = 0;
      let inWindow = 0;
      let handed = 0;
      for (let kill = 0; kill < SPOOL_KILLS; kill++) {
        const directory = mkdtempSync(path.join(tmpdir(), 'bench-spool-'));
        defer(() => rmSync(directory, { recursive: true, force: true }));
        const child = tsx('bench/sdk-spool-child.ts', [service.url, directory, sync]);
        const handedAt = new Map<string, number>();
        const out = stdoutLines(child);
        const killAfter = 20 + Math.floor(Math.random() * 200);
        for (let n = 0; n < killAfter; n++) {
          const next = await out.next();
          if (next.done) throw new Error('the spool child died');
          const [, at, ...ids] = next.value.split(' ');
          for (const id of ids) handedAt.set(id, Number(at));
        }
        child.kill('SIGKILL');
        const killedAt = Date.now();
        await exited(child);
        for (let next = await out.next(); !next.done; next = await out.next()) {
          const [, at, ...ids] = next.value.split(' ');
          for (const id of ids) handedAt.set(id, Number(at));
        }
        const recovery = new TraceIngest({ apiKey: 'tik_bench', baseUrl: service.url, spoolDir: directory, logger: () => undefined });
        await recovery.flush(60_000);
        await recovery.shutdown(0);
        const counts = service.counts();
        handed += handedAt.size;
        lost += [...handedAt.keys()].filter((id) => !counts.has(id)).length;
        inWindow += [...handedAt.values()].filter((at) => at > killedAt - SPOOL_INTERVAL_MS).length;
      }
      rows.push({
        group: 'sdk',
        metric: `typescript: spool, traces lost over ${SPOOL_KILLS} kill -9 at random moments, spoolSync "${sync}"`,
        value: lost,
        unit: 'traces',
        baseline: sync === 'write' ? 0 : inWindow,
        target: sync === 'write' ? '0' : '<= handed over in the last interval (baseline)',
        note: `a child handing over traces of ${SPANS_PER_TRACE} spans without pause (background mode, batches of 50 to a stand-in answering in 2–22 ms) killed after 20–220 groups of 5; a new client on the directory delivers what was left. ${handed} handed over in all; baseline: those handed over in the ${SPOOL_INTERVAL_MS} ms before each kill`,
      });
    }
    return rows;
  });
}


const WHEN_WRITTEN = {
  interval: `the trace kept for a timer that makes and writes its record within ${SPOOL_INTERVAL_MS} ms (not on the caller's time)`,
  write: 'a record made and written (write(2)) per trace before end() returns',
  fsync: 'a record made, written and fsynced per trace before end() returns (survives a power loss; no target)',
};

const COST_REPEATS = 3;

/** The caller's cost with each spool setting ÷ without the spool: each in fresh processes, taking turns, median of their medians. */
async function spoolCallerCost(): Promise<BenchResult[]> {
  const settings = ['interval', 'write', 'fsync'] as const;
  const runs = new Map<string, number[]>();
  for (let repeat = 0; repeat < COST_REPEATS; repeat++) {
    for (const setting of ['off', ...settings]) {
      const { micros } = inFreshProcess<{ micros: number }>('bench/sdk-spool-cost.ts', [setting]);
      runs.set(setting, [...(runs.get(setting) ?? []), micros]);
    }
  }
  const off = percentile(runs.get('off') ?? [], 50);
  return settings.map((sync) => {
    const on = percentile(runs.get(sync) ?? [], 50);
    return {
      group: 'sdk',
      metric: `typescript: caller cost per span, spool on (spoolSync "${sync}") ÷ off`,
      value: round(on, 2),
      unit: 'µs',
      baseline: round(off, 2),
      ratio: round(on / off, 2),
      target: sync === 'fsync' ? undefined : '<= 2',
      note: `${SPANS_PER_TRACE}-span traces (bench/sdk-workload.ts), median of 7 rounds of 500 with a serverless flush between them (not timed), in a fresh process per setting (bench/sdk-spool-cost.ts: a setting's garbage is collected on its own time), the four settings taking turns ${COST_REPEATS} times, median of those; ${WHEN_WRITTEN[sync]}; the spool on ${tmpdir()}. Baseline: the same without a spool`,
    };
  });
}

/** bench/sdk-freeze-worker.ts: client.wrapHandler with the spool's synchronous setting. */
export const TYPESCRIPT_FREEZE_WORKER: FreezeWorker = {
  language: 'typescript',
  group: 'sdk',
  command: process.execPath,
  args: ['--import', 'tsx', 'bench/sdk-freeze-worker.ts'],
  description: 'client.wrapHandler (serverless, spoolSync "write")',
};

/** The TypeScript SDK's freeze, spool-loss and spool-cost rows of the `sdk` group. */
export async function runTypescriptSdkPromisesBench(): Promise<BenchResult[]> {
  return [...(await spoolCallerCost()), ...(await spoolLoss()), ...(await freezeHarness(TYPESCRIPT_FREEZE_WORKER))];
}
