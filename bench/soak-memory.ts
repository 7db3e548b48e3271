import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeHeapSnapshot } from 'node:v8';
import { startLocalStack } from '../devkit/local-stack/local-stack.js';
import { localPaths } from '../devkit/local-stack/local-state.js';
import { loadBatchBody, unlimitedOrganizationKey } from './overload-copies.js';

/**
 * A one-off soak (issue 18 item 7), not part of `npm run bench`: the local stack in this process under
 * steady load for `--minutes`, its memory sampled every 30 s after a full GC (run with `--expose-gc`), and
 * heap snapshots after warm-up and at the end when `--snapshots DIR` is given.
 *
 *   node --expose-gc --import tsx bench/soak-memory.ts --minutes 30 --snapshots /tmp/soak [--concurrency 10] [--sample-seconds 30] [--no-compaction]
 *
 * Each sample also splits the RSS (Linux `/proc/self/smaps_rollup`: anonymous vs file-backed pages) and
 * counts kinesalite's LevelDB tables, which live in this process's native memory (their index blocks and
 * filters stay cached per open table), so a growth outside the JS heap can be put where it is.
 */
const TRACES_PER_BATCH = 100;

const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);
const arg = (name: string) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
};

/** Anonymous and file-backed resident kB of this process, where Linux says so. */
function residentSplit(): { anonMb?: number; fileMb?: number } {
  try {
    const rollup = readFileSync('/proc/self/smaps_rollup', 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? NaN);
    return { anonMb: Math.round(kb('Anonymous') / 1024), fileMb: Math.round((kb('Rss') - kb('Anonymous')) / 1024) };
  } catch {
    return {};
  }
}

/** LevelDB tables of kinesalite's store, and their bytes. */
function levelDbTables(dir: string): { ldbFiles: number; ldbMb: number } {
  let files = 0;
  let bytes = 0;
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    if (!name.endsWith('.ldb') && !name.endsWith('.log')) continue;
    files += name.endsWith('.ldb') ? 1 : 0;
    bytes += statSync(path.join(dir, name)).size;
  }
  return { ldbFiles: files, ldbMb: mb(bytes) };
}

async function soak(minutes: number, snapshots: string | undefined, concurrency: number, sampleMs: number, compaction: boolean): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  const stateDir = mkdtempSync(path.join(tmpdir(), 'soak-'));
  const stack = await startLocalStack({ paths: localPaths(stateDir), port: 0, ...(compaction ? {} : { compactionIntervalMs: 0 }) });
  try {
    const apiKey = await unlimitedOrganizationKey(stack.endpoints.dynamodb, 'soak');

    const started = Date.now();
    const end = started + minutes * 60_000;
    const statuses: Record<string, number> = {};
    const load = Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (Date.now() < end) {
          // A request that fails is counted by its error's name: one refused connection must not end an hour's soak.
          const status = await fetch(`${stack.endpoints.api}/v1/traces/ingest`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-API-Key': apiKey }, body: loadBatchBody(TRACES_PER_BATCH) }).then(
            async (response) => (await response.arrayBuffer(), String(response.status)),
            (error: unknown) => `${(error as Error).name}: ${((error as Error).cause as Error | undefined)?.message ?? (error as Error).message}`,
          );
          statuses[status] = (statuses[status] ?? 0) + 1;
        }
      }),
    );
    const sample = (label: string) => {
      gc?.();
      const m = process.memoryUsage();
      const minute = ((Date.now() - started) / 60_000).toFixed(1);
      console.log(
        JSON.stringify({
          minute,
          label,
          rssMb: mb(m.rss),
          ...residentSplit(),
          heapTotalMb: mb(m.heapTotal),
          heapUsedMb: mb(m.heapUsed),
          externalMb: mb(m.external),
          arrayBuffersMb: mb(m.arrayBuffers),
          ...levelDbTables(localPaths(stateDir).kinesis),
          statuses,
        }),
      );
    };
    let snapshotTaken = false;
    while (Date.now() < end) {
      await new Promise((resolve) => setTimeout(resolve, sampleMs));
      sample('load');
      if (snapshots && !snapshotTaken && Date.now() - started > 3 * 60_000) {
        console.log(JSON.stringify({ snapshot: writeHeapSnapshot(path.join(snapshots, 'warm.heapsnapshot')) }));
        snapshotTaken = true;
      }
    }
    await load;
    await new Promise((resolve) => setTimeout(resolve, 30_000));
    sample('idle 30 s after the load');
    if (snapshots) console.log(JSON.stringify({ snapshot: writeHeapSnapshot(path.join(snapshots, 'end.heapsnapshot')) }));
  } finally {
    await stack.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await soak(Number(arg('--minutes') ?? 30), arg('--snapshots'), Number(arg('--concurrency') ?? 10), Number(arg('--sample-seconds') ?? 30) * 1000, !process.argv.includes('--no-compaction'));
