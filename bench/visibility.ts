import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { DuckDBInstance } from '@duckdb/node-api';
import { LOCAL_DIR_ENV, LOCAL_NAMES } from '../devkit/local-stack/local-state.js';
import { type StackChild, startStackChild } from '../devkit/local-stack/stack-child.js';
import { quantile } from '../devkit/engines/kinesis-latency.js';
import { createDatasetViews } from '../scripts/local/query.js';
import { unlimitedOrganization } from './overload-copies.js';
import type { BenchResult } from './types.js';

/**
 * Issue 27: how soon an accepted trace is visible. `npm start` (its own process, as a user runs it) under steady
 * load: `--rate` requests a second of `--traces` traces each for `--minutes`, open loop (a request is sent on
 * schedule whether or not the earlier ones were answered, up to `MAX_IN_FLIGHT`). The first trace of every
 * request answered 200 is sampled; from the moment the 200 arrived, the `traces` view (every row once, as
 * `npm run query` defines it, read here in process with the same views) is polled every second until the
 * trace is in it. After the load, polling goes on until every sample is visible or `DRAIN_LIMIT_MS` passes.
 *
 *   npm run bench -- visibility [--minutes 5] [--rate 20] [--traces 50]
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const POLL_MS = 1_000;
const MAX_IN_FLIGHT = 64;
const DRAIN_LIMIT_MS = 5 * 60_000;

const option = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(`--${name}`);
  const value = at === -1 ? fallback : Number(process.argv[at + 1]);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} takes a positive number`);
  return value;
};

/** `npm start` on a fresh state directory and a free port, resolved once it prints that it is ready. */
function startNpmStart(stateDir: string): Promise<StackChild> {
  return startStackChild({
    root: ROOT,
    env: { ...process.env, [LOCAL_DIR_ENV]: stateDir, PORT: '0', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    detached: true,
    timeoutMs: 180_000,
  });
}

/** Stops `npm start` as Ctrl-C would (its whole process group), and waits for it to exit. */
async function stopNpmStart(child: ChildProcess): Promise<void> {
  const running = () => child.exitCode === null && child.signalCode === null;
  if (child.pid === undefined || !running()) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  process.kill(-child.pid, 'SIGINT');
  await Promise.race([exited, sleep(30_000)]);
  if (running()) process.kill(-child.pid, 'SIGKILL');
}

function batchOf(traces: number): { body: string; sampled: string } {
  const now = Date.now();
  const ids = Array.from({ length: traces }, () => randomUUID());
  const body = JSON.stringify({
    traces: ids.map((trace_id, t) => ({
      trace_id,
      timestamp: new Date(now - t).toISOString(),
      root_span_name: 'agent',
      spans: [0, 1, 2].map((s) => ({ timestamp: new Date(now - t + s).toISOString(), name: `step-${s}`, input: '{"q":"x"}' })),
    })),
  });
  return { body, sampled: ids[0]! };
}

export interface Visibility {
  sent: number;
  statuses: Record<string, number>;
  samples: number;
  visible: number;
  /** Seconds from the 200 to the first poll that saw the trace in `traces`. */
  secondsToVisible: number[];
  pollSeconds: number[];
  loadSeconds: number;
  loadAverage: { end: number; max: number };
}

export async function measureVisibility(minutes: number, rate: number, traces: number): Promise<Visibility> {
  const stateDir = mkdtempSync(path.join(tmpdir(), 'visibility-'));
  const stack = await startNpmStart(stateDir);
  const data = { s3Directory: stack.endpoints.s3Directory, bucket: LOCAL_NAMES.bucket };
  // The demo organization's quotas would refuse this load: an organization without quotas, made as `npm run admin` makes it.
  const { apiKey } = await unlimitedOrganization(stack.endpoints.dynamodb, 'visibility');
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  // Sampled trace id → when its 200 arrived (ms); removed once seen.
  const pending = new Map<string, number>();
  const secondsToVisible: number[] = [];
  const pollSeconds: number[] = [];
  const statuses: Record<string, number> = {};
  let sent = 0;
  let samples = 0;
  let maxLoad = loadavg()[0] ?? 0;
  try {
    let loadOver = false;
    let drainStartedAt = Infinity;
    const poller = (async () => {
      for (;;) {
        const tick = Date.now();
        if (pending.size > 0) {
          await createDatasetViews(connection, data);
          const ids = [...pending.keys()].map((id) => `'${id}'`).join(', ');
          const seen = await connection.runAndReadAll(`SELECT DISTINCT trace_id FROM traces WHERE trace_id IN (${ids})`);
          const polledAt = Date.now();
          for (const [id] of seen.getRows() as [string][]) {
            const answeredAt = pending.get(id);
            if (answeredAt === undefined) continue;
            secondsToVisible.push((polledAt - answeredAt) / 1000);
            pending.delete(id);
          }
          pollSeconds.push((polledAt - tick) / 1000);
        }
        maxLoad = Math.max(maxLoad, loadavg()[0] ?? 0);
        if (loadOver && (pending.size === 0 || Date.now() - drainStartedAt > DRAIN_LIMIT_MS)) return;
        await sleep(Math.max(0, POLL_MS - (Date.now() - tick)));
      }
    })();

    const started = Date.now();
    const end = started + minutes * 60_000;
    const inFlight = new Set<Promise<void>>();
    for (let i = 0; ; i++) {
      const due = started + (i * 1000) / rate;
      if (due >= end) break;
      await sleep(Math.max(0, due - Date.now()));
      if (inFlight.size >= MAX_IN_FLIGHT) await Promise.race(inFlight);
      const { body, sampled } = batchOf(traces);
      sent++;
      const request = fetch(`${stack.endpoints.api}/v1/traces/ingest`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-API-Key': apiKey },
        body,
        signal: AbortSignal.timeout(60_000),
      })
        .then(async (response) => {
          await response.arrayBuffer();
          statuses[response.status] = (statuses[response.status] ?? 0) + 1;
          if (response.status === 200) {
            pending.set(sampled, Date.now());
            samples++;
          }
        })
        .catch((error: unknown) => {
          const name = (error as Error).name;
          statuses[name] = (statuses[name] ?? 0) + 1;
        })
        .finally(() => inFlight.delete(request));
      inFlight.add(request);
    }
    await Promise.all(inFlight);
    const loadSeconds = (Date.now() - started) / 1000;
    drainStartedAt = Date.now();
    loadOver = true;
    await poller;
    return {
      sent,
      statuses,
      samples,
      visible: secondsToVisible.length,
      secondsToVisible,
      pollSeconds,
      loadSeconds,
      loadAverage: { end: loadavg()[0] ?? 0, max: maxLoad },
    };
  } finally {
    connection.closeSync();
    instance.closeSync();
    await stopNpmStart(stack.child);
    rmSync(stateDir, { recursive: true, force: true });
  }
}

/** `npm run bench -- visibility [--minutes 5] [--rate 20] [--traces 50]` (the minutes, then the drain). */
export async function runVisibilityBench(): Promise<BenchResult[]> {
  const minutes = option('minutes', 5);
  const rate = option('rate', 20);
  const traces = option('traces', 50);
  const m = await measureVisibility(minutes, rate, traces);
  const round1 = (x: number) => Math.round(x * 10) / 10;
  const where = `${rate} requests/s of ${traces} traces for ${minutes} min against npm start, the traces view polled every ${POLL_MS / 1000} s`;
  const note =
    `${m.samples} sampled traces (the first of every request answered 200), ${m.visible} seen; ${m.sent} requests sent in ${m.loadSeconds.toFixed(0)} s, ` +
    `answers ${JSON.stringify(m.statuses)}; a poll (views rebuilt and read) took p50 ${round1(quantile(m.pollSeconds, 0.5))} s, ` +
    `max ${round1(Math.max(...m.pollSeconds))} s; load average ${m.loadAverage.end.toFixed(1)} at the end, ${m.loadAverage.max.toFixed(1)} at most`;
  return [
    { group: 'visibility', metric: `visible in traces after the 200, p50: ${where}`, value: round1(quantile(m.secondsToVisible, 0.5)), unit: 's', target: 'goal <= 10', note },
    { group: 'visibility', metric: `visible in traces after the 200, p95: ${where}`, value: round1(quantile(m.secondsToVisible, 0.95)), unit: 's', target: '<= 60 (goal 10)' },
    { group: 'visibility', metric: `visible in traces after the 200, max: ${where}`, value: round1(Math.max(...m.secondsToVisible)), unit: 's' },
    { group: 'visibility', metric: `sampled traces not visible ${DRAIN_LIMIT_MS / 60_000} min after the load: ${where}`, value: m.samples - m.visible, unit: 'traces', target: '0' },
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(JSON.stringify(await runVisibilityBench(), null, 2));
