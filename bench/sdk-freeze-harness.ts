import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GetRecordsCommand, GetShardIteratorCommand, KinesisClient, ListShardsCommand } from '@aws-sdk/client-kinesis';
import type { CompactionRun } from '../lambda/compaction/compact-pending.js';
import { CompactionBusyError, compactLocal } from '../devkit/local-stack/local-compaction.js';
import { readJsonFile } from '../devkit/local-stack/local-state.js';
import { localClientConfig } from '../devkit/engines/provision.js';
import { queryLanded } from '../scripts/local/query.js';
import { exited, percentile, round, sleep, stdoutLines, withCleanup, within } from './engines-util.js';
import { BENCH_ORG_ID, type StackProcess, startStackProcess } from './stack-process.js';
import type { BenchResult } from './types.js';

/**
 * The freeze harness of issue 31, for either SDK, against `npm start`: simulated Lambda invocations in worker
 * processes, each followed by a freeze (SIGSTOP for 0–50 ms, then SIGCONT) or, one time in 20, SIGKILL and a new
 * worker on the same spool. Then, once the landing has caught up with the stream, `npm run compact` (open hours
 * included) and the `traces` and `spans` views as `npm run query` reads them: every trace of a flush that returned
 * with nothing pending must be there, and no trace or span twice.
 *
 * A worker is one Lambda execution environment, in any language. It is started as
 * `<command> <args…> <API base URL> <API key> <spool directory>` from the project root, and for each line on its stdin
 * (the invocation's event) runs a handler that hands over 10 traces of one span through the SDK's Lambda wrapper
 * (serverless, the spool's synchronous setting "write"), then prints one JSON line:
 * `{"ids": [the 10 trace ids], "pending": traces the client still holds after the wrapper's flush,
 *   "flush_ms": how long that flush took, "spool_ms": [how long each spool write of the invocation took]}`.
 * It exits when its stdin closes. bench/sdk-freeze-worker.ts is the TypeScript one.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const FREEZE_INVOCATIONS = 1_000;
const TRACES_PER_INVOCATION = 10;
const KILL_SHARE = 0.05;
const MAX_FREEZE_MS = 50;
// Generous: a flush is one round trip, the landing a few seconds; these only turn a hang into an error.
const INVOCATION_DEADLINE_MS = 120_000;
const LANDING_DEADLINE_MS = 600_000;
const COMPACTION_DEADLINE_MS = 300_000;

/** How to start one SDK's worker (see above). */
export interface FreezeWorker {
  /** Starts every metric name: `typescript`, `Python`. */
  language: string;
  /** The bench group of its rows. */
  group: string;
  command: string;
  args: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** The wrapper and settings the worker uses, for the notes. */
  description: string;
}

/** One line a worker prints per invocation. */
interface Invocation {
  ids: string[];
  pending: number;
  flush_ms: number;
  spool_ms: number[];
}

interface Worker {
  child: ChildProcess;
  out: AsyncIterator<string>;
}

function startWorker(worker: FreezeWorker, stack: StackProcess, spool: string, defer: (cleanup: () => unknown) => void): Worker {
  const child = spawn(worker.command, [...worker.args, stack.endpoints.api, stack.apiKey, spool], {
    cwd: root,
    env: { ...process.env, ...worker.env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  defer(() => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL'));
  return { child, out: stdoutLines(child) };
}

/**
 * True when the landing has read the whole stream: after each shard's checkpoint (written once its batch has landed)
 * there is no record. kinesalite answers GetRecords with the records there are (Kinesis itself may answer an empty
 * page before later records, which is why this is a local check).
 */
async function landingCaughtUp(stack: StackProcess, kinesis: KinesisClient): Promise<boolean> {
  const checkpoints = readJsonFile<Record<string, string>>(stack.paths.checkpoints) ?? {};
  const { Shards = [] } = await kinesis.send(new ListShardsCommand({ StreamName: stack.endpoints.stream }));
  for (const { ShardId } of Shards) {
    const after = ShardId === undefined ? undefined : checkpoints[ShardId];
    const { ShardIterator } = await kinesis.send(
      new GetShardIteratorCommand({
        StreamName: stack.endpoints.stream,
        ShardId,
        ...(after ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', StartingSequenceNumber: after } : { ShardIteratorType: 'TRIM_HORIZON' }),
      }),
    );
    const { Records = [] } = await kinesis.send(new GetRecordsCommand({ ShardIterator, Limit: 1 }));
    if (Records.length > 0) return false;
  }
  return true;
}

async function waitForLanding(stack: StackProcess): Promise<void> {
  const kinesis = new KinesisClient(localClientConfig(stack.endpoints.kinesis));
  try {
    const deadline = Date.now() + LANDING_DEADLINE_MS;
    while (!(await landingCaughtUp(stack, kinesis))) {
      if (Date.now() > deadline) throw new Error(`the landing had not caught up with the stream after ${LANDING_DEADLINE_MS / 1000} s`);
      await sleep(2_000);
    }
  } finally {
    kinesis.destroy();
  }
}

/** `npm run compact`: every pending hour, open ones included, waiting its turn if the stack's own timer is compacting. */
async function compactEverything(stack: StackProcess): Promise<CompactionRun> {
  const deadline = Date.now() + COMPACTION_DEADLINE_MS;
  for (;;) {
    try {
      const run = await compactLocal(stack.endpoints, stack.paths, { includeOpenHours: true });
      if (run.failed.length > 0) throw new Error(`compaction failed: ${run.failed.map((failure) => `${failure.slice}: ${failure.error}`).join('; ')}`);
      return run;
    } catch (error) {
      if (!(error instanceof CompactionBusyError) || Date.now() > deadline) throw error;
      await sleep(1_000);
    }
  }
}

/** What the views hold for the bench organization: copies per trace id, and rows beyond one per id. */
async function readViews(stack: StackProcess): Promise<{ copies: Map<string, number>; extraSpans: number; extraRawTraces: number }> {
  const org = `org_id = '${BENCH_ORG_ID}'`;
  const [traces, spans, raw] = await queryLanded(
    `SELECT trace_id, count(*)::INTEGER AS copies FROM traces WHERE ${org} GROUP BY trace_id;
     SELECT (count(*) - count(DISTINCT (trace_id, span_id)))::INTEGER AS extra FROM spans WHERE ${org};
     SELECT (count(*) - count(DISTINCT trace_id))::INTEGER AS extra FROM traces_raw WHERE ${org}`,
    { s3Directory: stack.paths.s3, bucket: stack.endpoints.bucket },
  );
  return {
    copies: new Map((traces?.rows ?? []).map((row) => [String(row.trace_id), Number(row.copies)])),
    extraSpans: Number(spans?.rows[0]?.extra),
    extraRawTraces: Number(raw?.rows[0]?.extra),
  };
}

const seconds = (since: number) => Math.round((performance.now() - since) / 1000);

/**
 * Runs `invocations` (at least 1,000 for the rows of a bench run) of `worker` against a fresh `npm start`, and
 * returns its freeze rows: traces lost, traces or spans duplicated in the views after compaction, the p99 of
 * `flush()` and of the spool writes.
 */
export async function freezeHarness(worker: FreezeWorker, invocations = FREEZE_INVOCATIONS): Promise<BenchResult[]> {
  return withCleanup(async (defer) => {
    const began = performance.now();
    const load = loadavg()[0]?.toFixed(1) ?? '?';
    const work = mkdtempSync(path.join(tmpdir(), 'bench-freeze-'));
    defer(() => rmSync(work, { recursive: true, force: true }));
    const stack = await startStackProcess(work, defer);
    const spool = path.join(work, 'spool');
    const startedInvoking = performance.now();
    let current = startWorker(worker, stack, spool, defer);
    const done: Invocation[] = [];
    let kills = 0;
    for (let n = 0; n < invocations; n++) {
      current.child.stdin?.write(`invocation-${n}\n`);
      const next = await within(current.out.next(), INVOCATION_DEADLINE_MS, `the ${worker.language} freeze worker did not answer invocation ${n}`);
      if (next.done) throw new Error(`the ${worker.language} freeze worker died at invocation ${n}`);
      done.push(JSON.parse(next.value) as Invocation);
      if (Math.random() < KILL_SHARE) {
        current.child.kill('SIGKILL');
        await exited(current.child);
        kills++;
        current = startWorker(worker, stack, spool, defer);
      } else {
        current.child.kill('SIGSTOP');
        await sleep(Math.random() * MAX_FREEZE_MS);
        current.child.kill('SIGCONT');
      }
    }
    current.child.stdin?.end();
    await within(exited(current.child), INVOCATION_DEADLINE_MS, `the ${worker.language} freeze worker did not exit when its stdin closed`);
    const invokingSeconds = seconds(startedInvoking);

    const startedLanding = performance.now();
    await waitForLanding(stack);
    const landingSeconds = seconds(startedLanding);
    const compaction = await compactEverything(stack);
    const { copies, extraSpans, extraRawTraces } = await readViews(stack);

    const settled = done.filter((invocation) => invocation.pending === 0);
    const settledIds = settled.flatMap((invocation) => invocation.ids);
    const lost = settledIds.filter((id) => !copies.has(id)).length;
    const duplicatedTraces = [...copies.values()].reduce((sum, count) => sum + count - 1, 0);
    const unsettledIds = done.filter((invocation) => invocation.pending > 0).flatMap((invocation) => invocation.ids);
    const compactedRows = compaction.compacted.reduce((sum, c) => sum + (c.outcome === 'compacted' ? c.rows.traces : 0), 0);
    const dropped = compaction.compacted.reduce((sum, c) => sum + (c.outcome === 'compacted' ? c.duplicatesDropped : 0), 0);
    const setup =
      `${invocations} invocations of a handler handing over ${TRACES_PER_INVOCATION} traces of one span through ${worker.description}, each followed by ` +
      `SIGSTOP for 0–${MAX_FREEZE_MS} ms then SIGCONT, or (${kills} times) SIGKILL and a new worker on the same spool; ${stack.description}; ` +
      `${cpus().length} CPUs, load average ${load} when it started; ${seconds(began)} s in all (invocations ${invokingSeconds} s, landing caught up ${landingSeconds} s later)`;
    const views =
      `the traces and spans views as npm run query reads them, after the landing caught up with the stream and npm run compact (open hours included: ` +
      `${compactedRows} trace rows compacted, ${dropped} duplicate rows dropped; traces_raw held ${extraRawTraces} rows beyond one per trace)`;
    const prefix = `${worker.language}: freeze harness`;
    return [
      {
        group: worker.group,
        metric: `${prefix}, traces lost among flushes that returned with nothing pending`,
        value: lost,
        unit: 'traces',
        baseline: settledIds.length,
        target: '0',
        note:
          `${setup}. Lost: a trace of such a flush not in the traces view (${views}). Baseline: the traces of those ${settled.length} invocations; ` +
          `${done.length - settled.length} flushes returned with traces pending, ${unsettledIds.filter((id) => copies.has(id)).length} of their ${unsettledIds.length} traces are in the view`,
      },
      {
        group: worker.group,
        metric: `${prefix}, traces or spans duplicated in the views after compaction`,
        value: duplicatedTraces + extraSpans,
        unit: 'rows',
        baseline: copies.size,
        target: '0',
        note: `${setup}. In ${views}: ${duplicatedTraces} rows beyond one per trace in traces, ${extraSpans} beyond one per span in spans. Baseline: the traces in the view`,
      },
      {
        group: worker.group,
        metric: `${prefix}, p99 of flush() per invocation`,
        value: round(percentile(done.map((invocation) => invocation.flush_ms), 99), 2),
        unit: 'ms',
        note: `${setup}; a round trip to npm start: no target`,
      },
      {
        group: worker.group,
        metric: `${prefix}, p99 of the spool writes per invocation, spool sync "write"`,
        value: round(percentile(done.map((invocation) => invocation.spool_ms.reduce((sum, ms) => sum + ms, 0)), 99), 3),
        unit: 'ms',
        target: '<= 15',
        note: `${setup}; ${TRACES_PER_INVOCATION} trace records, a batch record and a done record, each written (write(2)) before the call returns`,
      },
      {
        group: worker.group,
        metric: `${prefix}, p99 of one spool write (a record made and written), spool sync "write"`,
        value: round(percentile(done.flatMap((invocation) => invocation.spool_ms), 99), 3),
        unit: 'ms',
        target: '<= 15',
        note: `${setup}; over all ${done.reduce((sum, invocation) => sum + invocation.spool_ms.length, 0)} writes`,
      },
    ];
  });
}
