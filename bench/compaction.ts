import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compactedObjectKey, rawSlicePrefix, type Slice } from '../lambda/compaction/compaction-keys.js';
import { compactSlice, type CompactionStore, DEFAULT_BYTES_PER_PART, DEFAULT_ROWS_PER_PART, type StoredObject } from '../lambda/compaction/compact-slice.js';
import { spanBatches, traceBatches } from '../lambda/landing/column-batches.js';
import { landingObjectKey } from '../lambda/landing/landing-keys.js';
import { type DatasetName, SPANS, TRACES } from '../lambda/landing/landing-schema.js';
import { writeParquet } from '../lambda/landing/parquet-writer.js';
import { inFreshProcess } from './fresh-process.js';
import { landable, peakRssMb, type SyntheticTrace, syntheticTraces } from './landing.js';
import type { BenchResult } from './types.js';

/**
 * Compaction (issue 13): objects per organization-day after compaction (simulated with the landing's and the
 * compaction's key planners), DuckDB query time over a busy hour raw vs compacted, and compaction rows/s with
 * peak RSS for a large hour, measured in a fresh process.
 */

const SLICE: Slice = { orgId: 'org-bench', dt: '2026-11-22', hour: '10' };
const HOUR_START_MICROS = Date.UTC(2026, 10, 22, 10) * 1000;

/** The busy organization of measure 1: 10 ingest batches/s all day, each of 10 traces of 10 spans. */
const DAY = { batchesPerSecond: 10, tracesPerBatch: 10, spansPerTrace: 10, shards: 2, batchingWindowSeconds: 5 };

/**
 * Measure 1, simulated: per shard and 5 s batching window the landing writes one object per dataset and hour
 * (`landingObjectKey`); compaction then writes ceil(rows / rowsPerPart) objects per dataset and hour
 * (`compactedObjectKey`, as `compactDataset` plans them). Counts distinct keys over the 24 hours.
 */
export function objectsPerOrgDay(rowsPerPart = DEFAULT_ROWS_PER_PART): Record<DatasetName, { raw: number; compacted: number; rowsPerHour: number }> {
  const tracesPerHour = DAY.batchesPerSecond * DAY.tracesPerBatch * 3600;
  const rowsPerHour: Record<DatasetName, number> = { traces: tracesPerHour, spans: tracesPerHour * DAY.spansPerTrace };
  const result = {} as Record<DatasetName, { raw: number; compacted: number; rowsPerHour: number }>;
  for (const dataset of ['traces', 'spans'] as const) {
    const raw = new Set<string>();
    const compacted = new Set<string>();
    for (let hour = 0; hour < 24; hour++) {
      const slice: Slice = { ...SLICE, hour: String(hour).padStart(2, '0') };
      for (let shard = 0; shard < DAY.shards; shard++) {
        for (let window = 0; window < 3600 / DAY.batchingWindowSeconds; window++) {
          raw.add(landingObjectKey(dataset, { shardId: `shardId-${String(shard).padStart(12, '0')}`, orgId: slice.orgId, dt: slice.dt, hour: slice.hour, firstSequenceNumber: String(hour * 1e6 + window) }));
        }
      }
      const parts = Math.max(1, Math.ceil(rowsPerHour[dataset] / rowsPerPart));
      for (let part = 0; part < parts; part++) compacted.add(compactedObjectKey(dataset, slice, 1, part, parts));
    }
    result[dataset] = { raw: raw.size, compacted: compacted.size, rowsPerHour: rowsPerHour[dataset] };
  }
  return result;
}

/** The data bucket as a directory: keys are relative paths, the ETag is the content's MD5, as in S3. */
class DirectoryStore implements CompactionStore {
  constructor(readonly root: string) {}

  async list(prefix: string): Promise<StoredObject[]> {
    const dir = path.join(this.root, prefix.slice(0, prefix.lastIndexOf('/') + 1));
    let names: string[];
    try {
      names = readdirSync(dir, { recursive: true }) as string[];
    } catch {
      return [];
    }
    return names
      .map((name) => path.posix.join(path.relative(this.root, dir).split(path.sep).join('/'), name.split(path.sep).join('/')))
      .filter((key) => key.startsWith(prefix) && statSync(path.join(this.root, key)).isFile())
      .sort()
      .map((key) => ({ key, etag: etagOf(readFileSync(path.join(this.root, key))), size: statSync(path.join(this.root, key)).size }));
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    try {
      return readFileSync(path.join(this.root, key));
    } catch {
      return undefined;
    }
  }

  async open(object: StoredObject): Promise<ArrayBuffer> {
    const body = readFileSync(path.join(this.root, object.key));
    return body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer;
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    mkdirSync(path.dirname(path.join(this.root, key)), { recursive: true });
    writeFileSync(path.join(this.root, key), body);
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (const key of keys) unlinkSync(path.join(this.root, key));
  }
}

const etagOf = (body: Uint8Array) => `"${createHash('md5').update(body).digest('hex')}"`;

const isoMicros = (micros: number) => `${new Date(Math.floor(micros / 1000)).toISOString().slice(0, 23)}${String(micros % 1000).padStart(3, '0')}Z`;

/** Traces `first`… of `total` synthetic traces spread evenly over the slice's hour, one organization. */
function hourOfTraces(first: number, count: number, total: number, spansPerTrace: number): SyntheticTrace[] {
  const step = Math.floor(3_500_000_000 / total);
  return syntheticTraces(count, spansPerTrace, first + 13).map(({ context, trace }, t) => {
    const micros = HOUR_START_MICROS + (first + t) * step;
    return {
      context: { ...context, org_id: SLICE.orgId, received_at: isoMicros(micros + 500_000) },
      trace: { ...trace, timestamp: isoMicros(micros), spans: trace.spans.map((span, s) => ({ ...span, timestamp: isoMicros(micros + s * 1_001) })) },
    };
  });
}

/** Lands `traceCount` traces of the hour as `objects` raw objects per dataset (one per batching window), under `root`. */
function landRawHour(root: string, traceCount: number, spansPerTrace: number, objects: number): void {
  const perObject = Math.ceil(traceCount / objects);
  for (let o = 0; o * perObject < traceCount; o++) {
    // Generated per object, so that a large hour never sits in memory whole.
    const group = landable(hourOfTraces(o * perObject, Math.min(perObject, traceCount - o * perObject), traceCount, spansPerTrace));
    const key = { shardId: 'shardId-000000000000', orgId: SLICE.orgId, dt: SLICE.dt, hour: SLICE.hour, firstSequenceNumber: String(1e9 + o) };
    for (const [dataset, file] of [
      ['traces', writeParquet(TRACES, traceBatches(group))],
      ['spans', writeParquet(SPANS, spanBatches(group))],
    ] as const) {
      const target = path.join(root, landingObjectKey(dataset, key));
      mkdirSync(path.dirname(target), { recursive: true });
      writeFileSync(target, file.bytes);
    }
  }
}

interface CompactionMeasurement {
  seconds: number;
  rowsRead: number;
  spanRows: number;
  objectsWritten: number;
  peakRssMb: number;
  baselineRssMb: number;
}

/** Measure 3, in a fresh process: compacts the slice under `root`; RSS before is after imports only. */
async function measureCompaction(root: string): Promise<CompactionMeasurement> {
  const baselineRssMb = peakRssMb();
  const started = process.hrtime.bigint();
  const result = await compactSlice({ store: new DirectoryStore(root) }, SLICE);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { seconds, rowsRead: result.rowsRead, spanRows: result.rows.spans, objectsWritten: result.objectsWritten, peakRssMb: peakRssMb(), baselineRssMb };
}

const BUSY_HOUR = { traces: 3_600, spansPerTrace: 20, objects: 720 };
/** The 1,000,000-span hour of issue 13 (BENCH_LARGE_TRACES sets a smaller or larger one). */
const LARGE_HOUR = { traces: Number(process.env.BENCH_LARGE_TRACES ?? 25_000), spansPerTrace: 40, objects: 720 };
const QUERY_ROUNDS = 3;

/** The query of measure 2: an hour's dashboard over spans (per kind: count, tokens, p95 latency, errors). */
const spansQuery = (source: string) =>
  `SELECT kind, count(*) AS spans, sum(total_tokens) AS tokens, quantile_cont(duration_ms, 0.95) AS p95, count(*) FILTER (status = 'error') AS errors FROM ${source} GROUP BY kind ORDER BY kind`;

/** Fastest of QUERY_ROUNDS runs of each query, alternating, each on a fresh DuckDB instance (no cache). */
async function timeQueries(sources: Record<'raw' | 'compacted', string>): Promise<Record<'raw' | 'compacted', { ms: number; result: string }>> {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const best: Record<string, { ms: number; result: string }> = {};
  for (let round = 0; round < QUERY_ROUNDS; round++) {
    for (const [name, source] of Object.entries(sources)) {
      const instance = await DuckDBInstance.create(':memory:', { threads: '2' });
      const connection = await instance.connect();
      const started = process.hrtime.bigint();
      const reader = await connection.runAndReadAll(spansQuery(source));
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      connection.closeSync();
      instance.closeSync();
      const result = JSON.stringify(reader.getRowsJson());
      if (!best[name] || ms < best[name]!.ms) best[name] = { ms, result };
    }
  }
  return best as Record<'raw' | 'compacted', { ms: number; result: string }>;
}

const round1 = (n: number) => Math.round(n * 10) / 10;

export async function runCompactionBench(): Promise<BenchResult[]> {
  const script = fileURLToPath(import.meta.url);
  const rows: BenchResult[] = [];

  const day = objectsPerOrgDay();
  for (const dataset of ['traces', 'spans'] as const) {
    const { raw, compacted, rowsPerHour } = day[dataset];
    rows.push({
      group: 'compaction',
      metric: `${dataset} objects per org-day after compaction, org at ${DAY.batchesPerSecond} batches/s all day`,
      value: compacted,
      unit: 'objects',
      baseline: raw,
      ratio: +(compacted / raw).toFixed(4),
      target: '<= 24 objects',
      note: `simulated day (landing and compaction key planners): ${DAY.tracesPerBatch} traces × ${DAY.spansPerTrace} spans per batch, ${DAY.shards} shards, one raw object per shard per ${DAY.batchingWindowSeconds} s window (baseline: raw objects); ${rowsPerHour.toLocaleString('en')} rows/hour, ${DEFAULT_ROWS_PER_PART.toLocaleString('en')} rows per compacted object at most, so ${compacted <= 24 ? 'one object per hour' : `${compacted / 24} objects per hour: the target holds only up to ${DEFAULT_ROWS_PER_PART.toLocaleString('en')} rows per hour`}`,
    });
  }

  const busyDir = mkdtempSync(path.join(tmpdir(), 'compaction-query-'));
  try {
    landRawHour(busyDir, BUSY_HOUR.traces, BUSY_HOUR.spansPerTrace, BUSY_HOUR.objects);
    const summary = await compactSlice({ store: new DirectoryStore(busyDir) }, SLICE);
    const compactedFiles = (await new DirectoryStore(busyDir).list(`compacted/${rawSlicePrefix('spans', SLICE)}`)).map((o) => `'${path.join(busyDir, o.key)}'`);
    const times = await timeQueries({
      raw: `read_parquet('${path.join(busyDir, rawSlicePrefix('spans', SLICE))}*.parquet')`,
      compacted: `read_parquet([${compactedFiles.join(', ')}])`,
    });
    if (times.raw.result !== times.compacted.result) throw new Error(`raw and compacted answers differ: ${times.raw.result} vs ${times.compacted.result}`);
    rows.push({
      group: 'compaction',
      metric: 'DuckDB query time over one busy org-hour of spans, compacted vs raw',
      value: round1(times.compacted.ms),
      unit: 'ms',
      baseline: round1(times.raw.ms),
      ratio: +(times.compacted.ms / times.raw.ms).toFixed(3),
      note: `${summary.rows.spans.toLocaleString('en')} span rows; raw: ${BUSY_HOUR.objects} objects (one per 5 s window of one shard), compacted: ${compactedFiles.length}; per-kind count, tokens, p95 duration, errors via read_parquet over local files (same answers checked), DuckDB 2 threads, fastest of ${QUERY_ROUNDS} alternating fresh instances`,
    });
  } finally {
    rmSync(busyDir, { recursive: true, force: true });
  }

  const largeDir = mkdtempSync(path.join(tmpdir(), 'compaction-large-'));
  try {
    inFreshProcess<{ ok: true }>(script, ['--land', largeDir, String(LARGE_HOUR.traces), String(LARGE_HOUR.spansPerTrace), String(LARGE_HOUR.objects)]);
    const m = inFreshProcess<CompactionMeasurement>(script, ['--compact', largeDir]);
    const spans = LARGE_HOUR.traces * LARGE_HOUR.spansPerTrace;
    const scaled = spans < 1_000_000 ? ' (NOT the 1,000,000 spans of issue 13)' : '';
    const what = `${spans.toLocaleString('en')}-span hour${scaled} (${LARGE_HOUR.traces.toLocaleString('en')} traces × ${LARGE_HOUR.spansPerTrace}) in ${LARGE_HOUR.objects} raw objects per dataset, from a local directory`;
    rows.push(
      { group: 'compaction', metric: 'compaction rows/s (traces + spans read, deduplicated, written)', value: Math.round(m.rowsRead / m.seconds), unit: 'rows/s', note: `${what}; ${m.rowsRead.toLocaleString('en')} rows in ${round1(m.seconds)} s, ${m.objectsWritten} objects written; fresh process, one core of a loaded 2-core machine` },
      { group: 'compaction', metric: 'compaction peak RSS', value: Math.round(m.peakRssMb), unit: 'MB', note: `${what}; parts of at most ${DEFAULT_ROWS_PER_PART.toLocaleString('en')} input rows and ${DEFAULT_BYTES_PER_PART / 1024 / 1024} MiB of input Parquet; RSS before compacting ${Math.round(m.baselineRssMb)} MB` },
    );
  } finally {
    rmSync(largeDir, { recursive: true, force: true });
  }
  return rows;
}

const isMain = process.argv[1] === fileURLToPath(import.meta.url);
if (isMain && process.argv[2] === '--land') {
  const [dir, traces, spansPerTrace, objects] = process.argv.slice(3);
  landRawHour(dir!, Number(traces), Number(spansPerTrace), Number(objects));
  console.log(JSON.stringify({ ok: true }));
} else if (isMain && process.argv[2] === '--compact') {
  console.log(JSON.stringify(await measureCompaction(process.argv[3]!)));
} else if (isMain) {
  console.table(await runCompactionBench());
}
