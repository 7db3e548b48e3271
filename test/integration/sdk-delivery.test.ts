import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../scripts/local/engines.js';
import { NpmStart, ROOT, waitFor } from '../support/npm-start.js';

// Both SDKs against `npm start`: 20,000 traces each, from several processes, threads and async
// tasks, through a minute quota too small for them (429s) and a `kill -9` of the whole stack and
// its restart mid-run, with the spool on. After `npm run compact`, every trace handed over is in
// the `traces` view exactly once and each SDK's accounting matches the rows.

const TRACES_PER_SDK = 20_000;
const MINUTE_QUOTA = 10_000;
const TSX = path.join(ROOT, 'node_modules', '.bin', 'tsx');

interface SdkReport {
  handed: number;
  recovered: number;
  sent: number;
  rejected: Record<string, number>;
  dropped: Record<string, number>;
  pending: number;
  retried: Record<string, number>;
}

let work: string;
let stack: NpmStart;

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'sdk-delivery-'));
  stack = NpmStart.forState(path.join(work, 'state'), await freePort());
  await stack.start();
}, 120_000);

afterAll(async () => {
  await stack?.kill9();
  rmSync(work, { recursive: true, force: true });
});

async function organization(orgId: string): Promise<string> {
  await stack.admin('org', 'create', '--org', orgId, '--per-minute', String(MINUTE_QUOTA), '--per-hour', 'none', '--per-day', 'none', '--per-month', 'none');
  return (await stack.admin('key', 'create', '--org', orgId, '--name', 'sdk-load')).api_key as string;
}

function launch(command: string, args: string[], apiKey: string): { child: ChildProcess; exit: Promise<number | null>; log: () => string } {
  let log = '';
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, TRACE_INGEST_API_KEY: apiKey, TRACE_INGEST_BASE_URL: stack.endpoints.api, PYTHONPATH: path.join(ROOT, 'sdk/python/src') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (log += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString()));
  return { child, exit: new Promise((resolve) => child.on('exit', (code) => resolve(code))), log: () => log };
}

function outcomes(prefix: string): { ids: string[]; reports: SdkReport[] } {
  const files = readdirSync(work).filter((name) => name.startsWith(prefix) && name.endsWith('.json'));
  const parsed = files.map((name) => JSON.parse(readFileSync(path.join(work, name), 'utf8')) as { ids: string[]; report: SdkReport });
  return { ids: parsed.flatMap((file) => file.ids), reports: parsed.map((file) => file.report) };
}

const sum = (reports: SdkReport[], pick: (report: SdkReport) => number) => reports.reduce((total, report) => total + pick(report), 0);
const count = (counts: Record<string, number>) => Object.values(counts).reduce((total, n) => total + n, 0);

it('delivers every trace of both SDKs exactly once through 429s and a kill -9 of the stack', async () => {
  const [pythonKey, typescriptKey] = await Promise.all([organization('sdk-python'), organization('sdk-typescript')]);
  const loads = [
    launch('python3', ['test/integration/sdk/load_python.py', String(TRACES_PER_SDK), path.join(work, 'python'), path.join(work, 'spool-python')], pythonKey),
    ...[0, 1].map((n) =>
      launch(TSX, ['test/integration/sdk/load-typescript.ts', String(TRACES_PER_SDK / 2), path.join(work, `typescript.${n}.json`), path.join(work, 'spool-typescript')], typescriptKey),
    ),
  ];

  await sleep(6_000); // traces are flowing: kill the stack mid-run, and bring it back on the same state
  await stack.kill9();
  await sleep(1_000);
  await stack.start();

  const codes = await Promise.all(loads.map((load) => load.exit));
  expect({ codes, logs: codes.some((code) => code !== 0) ? loads.map((load) => load.log()) : [] }).toEqual({ codes: [0, 0, 0], logs: [] });

  for (const [orgId, prefix] of [['sdk-python', 'python'], ['sdk-typescript', 'typescript']] as const) {
    const { ids, reports } = outcomes(prefix);
    expect(ids).toHaveLength(TRACES_PER_SDK);
    expect(new Set(ids).size).toBe(TRACES_PER_SDK);
    // Nothing lost, nothing refused, nothing left: the SDK says every trace was sent.
    expect({
      handed: sum(reports, (report) => report.handed + report.recovered),
      sent: sum(reports, (report) => report.sent),
      rejected: sum(reports, (report) => count(report.rejected)),
      dropped: sum(reports, (report) => count(report.dropped)),
      pending: sum(reports, (report) => report.pending),
    }).toEqual({ handed: TRACES_PER_SDK, sent: TRACES_PER_SDK, rejected: 0, dropped: 0, pending: 0 });
    // The quota was too small for the load, and the stack went away mid-run.
    expect(sum(reports, (report) => report.retried.rate_limited ?? 0)).toBeGreaterThan(0);
    expect(sum(reports, (report) => count(report.retried) - (report.retried.rate_limited ?? 0))).toBeGreaterThan(0);

    await waitFor(
      `${orgId}: every trace landed`,
      async () => {
        const [row] = await stack.query(`SELECT count(DISTINCT trace_id) AS n FROM traces WHERE org_id = '${orgId}'`);
        return Number(row?.n) >= TRACES_PER_SDK ? true : undefined;
      },
      180_000,
    );
  }

  await stack.compact();
  for (const [orgId, prefix] of [['sdk-python', 'python'], ['sdk-typescript', 'typescript']] as const) {
    const rows = await stack.query(`SELECT trace_id FROM traces WHERE org_id = '${orgId}'`);
    const landed = rows.map((row) => row.trace_id as string);
    expect(landed).toHaveLength(TRACES_PER_SDK); // exactly once: no row twice
    expect(new Set(landed)).toEqual(new Set(outcomes(prefix).ids));
  }
}, 600_000);
