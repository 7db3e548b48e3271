import { performance } from 'node:perf_hooks';
import { compactPending } from '../lambda/compaction/compact-pending.js';
import { compactAndErase } from '../lambda/compaction/compact-and-erase.js';
import { newRequest } from '../lambda/erasure/erasure-record.js';
import { type ErasureSecret, StoredErasures, erasureStatus } from '../lambda/erasure/stored-erasures.js';
import { landRecords } from '../lambda/landing/land-records.js';
import { inlineRecord } from '../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../devkit/fakes/memory-bucket.js';
import { erasureCost } from './cost/erasure-cost.js';
import { syntheticTraces } from './landing.js';
import type { BenchResult } from './types.js';

/**
 * Erasure (issue 28) on the bench lake: 24 hours of one organization's realistic traces (`syntheticTraces`: one
 * trace every 1.23 s, 4 spans, chat-style input and output, 131 users), compacted; then one user who has a trace
 * in one hour of the 24 is erased through `compactAndErase` (find the hours, rewrite, mark done), as
 * `npm run compact` does. Baseline: compacting the same number of hours of this lake, in the same run.
 */
const HOURS = 24;
const TRACES_PER_HOUR = 2916;
const SPANS_PER_TRACE = 4;
/** Three users, each with one trace in one hour of the lake, erased one after another (the time is their median). */
const ERASED = [
  { user: 'bench-erased-user-1@example.test', hour: 5 },
  { user: 'bench-erased-user-2@example.test', hour: 13 },
  { user: 'bench-erased-user-3@example.test', hour: 20 },
];
const SECRET: ErasureSecret = { get: async () => Buffer.alloc(32, 9) };
const NOW = new Date('2026-11-24T12:00:00Z');

export async function runErasureBench(): Promise<BenchResult[]> {
  const bucket = new MemoryBucket();
  const erasures = new StoredErasures(bucket, SECRET);
  const deps = { store: bucket, erasures, now: () => NOW };
  const traces = syntheticTraces(HOURS * TRACES_PER_HOUR, SPANS_PER_TRACE);
  const hourOf = (t: number) => Math.floor(t / TRACES_PER_HOUR);
  for (const { user, hour } of ERASED) traces[hour * TRACES_PER_HOUR + 100]!.trace.user_id = user;
  for (let start = 0; start < traces.length; start += 1000) {
    await landRecords({ store: bucket }, traces.slice(start, start + 1000).map(({ context, trace }, i) => inlineRecord(start + i + 1, trace, context)));
  }
  const compactStart = performance.now();
  const compacted = await compactPending(deps, { includeOpenHours: true });
  const compactSeconds = (performance.now() - compactStart) / 1000;
  if (compacted.compacted.length < HOURS) throw new Error(`bench erasure: ${compacted.compacted.length} hours compacted, ${HOURS} expected`);
  // Raw objects expire after 3 days: a lake of 30 days is mostly compacted data; keep this one so too.
  for (const key of [...bucket.keys('traces/'), ...bucket.keys('spans/')]) bucket.objects.delete(key);
  if (new Set(traces.map((_, t) => hourOf(t))).size !== HOURS) throw new Error('bench erasure: the lake does not span its hours');

  const runs: { seconds: number; status: Awaited<ReturnType<typeof erasureStatus>>; parquetReadToFind: number }[] = [];
  for (const { user } of ERASED) {
    const request = newRequest('org-0', { user_ids: [user], session_ids: [], trace_ids: [] }, NOW);
    await erasures.put(request);
    const opensBefore = bucket.gets;
    const found = await erasures.findHours(request);
    const parquetReadToFind = bucket.gets - opensBefore;
    const start = performance.now();
    await compactAndErase(deps, SECRET);
    const seconds = (performance.now() - start) / 1000;
    const status = await erasureStatus(erasures, (await erasures.request('org-0', request.erasure_id))!);
    if (status.status !== 'done' || status.hours_done !== 1 || found.length !== 1) throw new Error(`bench erasure: ${JSON.stringify(status)} (found ${found.join(', ')})`);
    runs.push({ seconds, status, parquetReadToFind });
  }
  const median = [...runs].sort((a, b) => a.seconds - b.seconds)[1]!;
  const status = median.status;
  const eraseSeconds = median.seconds;
  const parquetReadToFind = Math.max(...runs.map((run) => run.parquetReadToFind));
  const found = [median.status.hours_found];
  const baselineSeconds = compactSeconds / HOURS;
  const bytesPerHour = status.bytes_of_hours;
  const bytesPerSecond = status.bytes_rewritten / eraseSeconds;
  const cost = erasureCost({ hoursOfHistory: 720, touchedHours: Math.ceil(720 * 0.01), bytesPerHour, workerSecondsPerHour: bytesPerHour / bytesPerSecond, workerMemoryMb: 3008 });
  const round = (value: number, digits = 3) => Number(value.toFixed(digits));
  const sizeOf = (prefix: string) => bucket.keys(prefix).reduce((sum, key) => sum + bucket.objects.get(key)!.body.byteLength, 0);
  const indexBytes = sizeOf('erasures/index/');
  const compactedBytes = sizeOf('compacted/');
  return [
    {
      group: 'erasure',
      metric: 'bytes rewritten ÷ bytes of the touched hours',
      value: runs.reduce((sum, run) => sum + run.status.bytes_rewritten, 0),
      unit: 'bytes',
      baseline: runs.reduce((sum, run) => sum + run.status.bytes_of_hours, 0),
      ratio: round(Math.max(...runs.map((run) => run.status.bytes_rewritten / run.status.bytes_of_hours))),
      target: '<= 1.2',
      note: `the largest of ${runs.length} erasures, each 1 of ${HOURS} hours rewritten; ${runs.map((run) => run.status.rows_removed).join('/')} rows removed`,
    },
    {
      group: 'erasure',
      metric: `erasure time on the bench lake (${HOURS} h × ${TRACES_PER_HOUR} traces × ${SPANS_PER_TRACE} spans, user in 1 h), vs compacting one hour`,
      value: round(eraseSeconds),
      unit: 's',
      baseline: round(baselineSeconds),
      ratio: round(eraseSeconds / baselineSeconds, 2),
      note: `median of ${runs.length} erasures (${runs.map((run) => run.seconds.toFixed(3)).join(' / ')} s): find the hours, rewrite them, mark the request done; baseline: the lake's first compaction (from raw) per hour`,
    },
    {
      group: 'erasure',
      metric: 'hour index bytes ÷ compacted bytes of the lake',
      value: indexBytes,
      unit: 'bytes',
      baseline: compactedBytes,
      ratio: round(indexBytes / compactedBytes),
      note: 'keyed hashes (64 bits, hex) of every user, session and trace id per hour and dataset',
    },
    { group: 'erasure', metric: 'Parquet objects read to find the hours', value: parquetReadToFind, unit: 'objects', note: `${found[0]} hour found from the index of ${HOURS}, for each of ${runs.length} erasures` },
    {
      group: 'erasure',
      metric: 'one erasure at list prices: a user in 1 % of an organization\'s hours over 30 days (this lake\'s hour size)',
      value: round(cost.dollars, 6),
      unit: 'USD',
      note: Object.entries(cost.lines).map(([line, dollars]) => `${line} $${dollars.toExponential(2)}`).join('; '),
    },
  ];
}
