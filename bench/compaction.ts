import { createHash } from 'node:crypto';
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Slice, compactedSlicePrefix } from '../lambda/lake/keys/compacted-keys.js';
import { rawPartitionPrefix } from '../lambda/lake/keys/partition.js';
import { compactSlice, DEFAULT_BYTES_PER_PART, DEFAULT_ROWS_PER_PART } from '../lambda/lake/lifecycle/compact-slice.js';
import type { CompactionDeps, LakeStore, StoredObject, UploadedPart } from '../lambda/lake/ports.js';
import { DEFAULT_UPLOAD_PART_BYTES } from '../lambda/lake/lifecycle/streamed-object.js';
import { COMPACTION_NODE_OPTIONS } from '../lib/constructs/compaction.js';
import { spanBatches, traceBatches } from '../lambda/datasets/column-batches.js';
import { landingObjectKey } from '../lambda/lake/keys/raw-keys.js';
import { SPANS, TRACES } from '../lambda/datasets/registry.js';
import { writeParquet } from '../lambda/datasets/parquet/parquet-writer.js';
import { inFreshProcess } from './fresh-process.js';
import { landable, peakRssMb, type SyntheticTrace, syntheticTraces } from './landing.js';
import type { BenchResult } from './types.js';

/**
 * Compaction (issue 13): objects per organization-day after compaction, counted from what the compaction
 * writes for a simulated busy hour; DuckDB query time over that hour raw vs compacted; compaction rows/s and
 * peak RSS for a 1,000,000-span hour, measured in a fresh process.
 */

const SLICE: Slice = { orgId: 'org-bench', dt: '2026-11-22', hour: '10' };
const HOUR_START_MICROS = Date.UTC(2026, 10, 22, 10) * 1000;

/** The busy organization of measure 1: 10 ingest batches/s all day, each of 10 traces of 10 spans. */
const DAY = { batchesPerSecond: 10, tracesPerBatch: 10, spansPerTrace: 10, shards: 2, batchingWindowSeconds: 5 };
const DAY_TRACES_PER_HOUR = DAY.batchesPerSecond * DAY.tracesPerBatch * 3600;
/** Raw objects per dataset and hour: one per shard and batching window (`landingObjectKey`). */
const RAW_OBJECTS_PER_HOUR = DAY.shards * (3600 / DAY.batchingWindowSeconds);

/**
 * The busy org's hour at 1/SCALE of its rows (7,200 traces, 72,000 spans) in as many raw objects as the full hour
 * (1,440 per dataset), compacted with the part limits divided by SCALE too, so that it is cut into at least as
 * many hash parts as the full hour (3.6 million spans: 15 parts by rows alone) would be.
 */
const SCALE = 50;
const BUSY_HOUR = { traces: DAY_TRACES_PER_HOUR / SCALE, spansPerTrace: DAY.spansPerTrace, objects: RAW_OBJECTS_PER_HOUR };
const SCALED_LIMITS = { rowsPerPart: DEFAULT_ROWS_PER_PART / SCALE, bytesPerPart: Math.round(DEFAULT_BYTES_PER_PART / SCALE) };

/** The data bucket as a directory: keys are relative paths, the ETag is the content's MD5, as in S3. */
class DirectoryStore implements LakeStore {
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

  // Multipart: parts are files under .uploads/<upload id>/ (outside every listed prefix); completing appends
  // them to the object in order, so the object never passes through memory whole.
  private nextUpload = 0;

  async createMultipartUpload(): Promise<string> {
    const uploadId = String(++this.nextUpload);
    mkdirSync(path.join(this.root, '.uploads', uploadId), { recursive: true });
    return uploadId;
  }

  async uploadPart(_key: string, uploadId: string, partNumber: number, body: Uint8Array): Promise<UploadedPart> {
    writeFileSync(path.join(this.root, '.uploads', uploadId, String(partNumber)), body);
    return { partNumber, etag: etagOf(body) };
  }

  async completeMultipartUpload(key: string, uploadId: string, parts: readonly UploadedPart[]): Promise<void> {
    const target = path.join(this.root, key);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, new Uint8Array(0));
    for (const { partNumber } of parts) appendFileSync(target, readFileSync(path.join(this.root, '.uploads', uploadId, String(partNumber))));
    rmSync(path.join(this.root, '.uploads', uploadId), { recursive: true, force: true });
  }

  async abortMultipartUpload(_key: string, uploadId: string): Promise<void> {
    rmSync(path.join(this.root, '.uploads', uploadId), { recursive: true, force: true });
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
  hashParts: number;
  peakRssMb: number;
  baselineRssMb: number;
}

/** Measure 3, in a fresh process: compacts the slice under `root`; RSS before is after imports only. */
async function measureCompaction(root: string): Promise<CompactionMeasurement> {
  const baselineRssMb = peakRssMb();
  const started = process.hrtime.bigint();
  // As deployed: the function runs with --expose-gc (COMPACTION_NODE_OPTIONS), and compose.ts hands gc() over.
  const result = await compactSlice({ store: new DirectoryStore(root), collectGarbage: (globalThis as { gc?: () => void }).gc }, SLICE);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { seconds, rowsRead: result.rowsRead, spanRows: result.rows.spans, objectsWritten: result.objectsWritten, hashParts: result.hashParts, peakRssMb: peakRssMb(), baselineRssMb };
}

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
const en = (n: number) => n.toLocaleString('en');

/**
 * Measures 1 and 2 over one busy hour: lands it, compacts it with the real compaction (the scaled part limits
 * of {@link SCALED_LIMITS}), counts the objects it wrote per dataset (× 24 for the day, every hour of the day
 * being the same), then times the same DuckDB query over the raw and the compacted objects.
 */
async function busyHourRows(): Promise<BenchResult[]> {
  const rows: BenchResult[] = [];
  const dir = mkdtempSync(path.join(tmpdir(), 'compaction-busy-'));
  try {
    landRawHour(dir, BUSY_HOUR.traces, BUSY_HOUR.spansPerTrace, BUSY_HOUR.objects);
    const store = new DirectoryStore(dir);
    const raw = { traces: (await store.list(rawPartitionPrefix('traces', SLICE))).length, spans: (await store.list(rawPartitionPrefix('spans', SLICE))).length };
    const limits: Partial<CompactionDeps> = SCALED_LIMITS;
    const summary = await compactSlice({ store, ...limits }, SLICE);
    for (const dataset of ['traces', 'spans'] as const) {
      const written = (await store.list(compactedSlicePrefix(dataset, SLICE))).length;
      const perDay = written * 24;
      rows.push({
        group: 'compaction',
        metric: `${dataset} objects per org-day after compaction, org at ${DAY.batchesPerSecond} batches/s all day`,
        value: perDay,
        unit: 'objects',
        baseline: raw[dataset] * 24,
        ratio: +(perDay / (raw[dataset] * 24)).toFixed(5),
        target: '<= 24 objects',
        note: `${perDay <= 24 ? 'met' : 'NOT met'}: counted from what compactSlice wrote for one busy hour (${written} object), × 24 hours. The hour: ${DAY.tracesPerBatch} traces × ${DAY.spansPerTrace} spans per batch at ${DAY.batchesPerSecond} batches/s, landed as ${en(raw[dataset])} raw objects per dataset (${DAY.shards} shards × one per ${DAY.batchingWindowSeconds} s window; baseline: those × 24), at 1/${SCALE} of its rows (${en(summary.rows.traces)} traces, ${en(summary.rows.spans)} spans) with the part limits / ${SCALE} too (${en(SCALED_LIMITS.rowsPerPart)} rows, ${en(SCALED_LIMITS.bytesPerPart)} bytes), so cut into ${summary.hashParts} hash parts for both datasets (the full hour: ${Math.ceil(DAY_TRACES_PER_HOUR / DEFAULT_ROWS_PER_PART)} + ${Math.ceil((DAY_TRACES_PER_HOUR * DAY.spansPerTrace) / DEFAULT_ROWS_PER_PART)} by rows alone, more by bytes)`,
      });
    }
    const compactedFiles = (await store.list(compactedSlicePrefix('spans', SLICE))).map((o) => `'${path.join(dir, o.key)}'`);
    const times = await timeQueries({
      raw: `read_parquet('${path.join(dir, rawPartitionPrefix('spans', SLICE))}*.parquet')`,
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
      note: `the hour above: ${en(summary.rows.spans)} span rows; raw: ${en(raw.spans)} objects, compacted: ${compactedFiles.length}; per-kind count, tokens, p95 duration, errors via read_parquet over local files (same answers checked), DuckDB 2 threads, fastest of ${QUERY_ROUNDS} alternating fresh instances`,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

export async function runCompactionBench(): Promise<BenchResult[]> {
  const script = fileURLToPath(import.meta.url);
  const rows = await busyHourRows();

  const largeDir = mkdtempSync(path.join(tmpdir(), 'compaction-large-'));
  try {
    inFreshProcess<{ ok: true }>(script, ['--land', largeDir, String(LARGE_HOUR.traces), String(LARGE_HOUR.spansPerTrace), String(LARGE_HOUR.objects)]);
    const m = inFreshProcess<CompactionMeasurement>(script, ['--compact', largeDir], COMPACTION_NODE_OPTIONS.split(' '));
    const spans = LARGE_HOUR.traces * LARGE_HOUR.spansPerTrace;
    const scaled = spans < 1_000_000 ? ' (NOT the 1,000,000 spans of issue 13)' : '';
    const what = `${en(spans)}-span hour${scaled} (${en(LARGE_HOUR.traces)} traces × ${LARGE_HOUR.spansPerTrace}) in ${LARGE_HOUR.objects} raw objects per dataset, from a local directory`;
    rows.push(
      { group: 'compaction', metric: 'compaction rows/s (traces + spans read, deduplicated, written)', value: Math.round(m.rowsRead / m.seconds), unit: 'rows/s', note: `${what}; ${en(m.rowsRead)} rows in ${round1(m.seconds)} s; ${m.hashParts} hash parts written as ${m.objectsWritten} objects (one per dataset); fresh process, one core of a loaded 2-core machine` },
      { group: 'compaction', metric: 'compaction peak RSS', value: Math.round(m.peakRssMb), unit: 'MB', note: `${what}; parts of at most ${en(DEFAULT_ROWS_PER_PART)} input rows and ${DEFAULT_BYTES_PER_PART / 1024 / 1024} MiB of input Parquet, each object streamed out in ${DEFAULT_UPLOAD_PART_BYTES / 1024 / 1024} MiB upload parts; node ${COMPACTION_NODE_OPTIONS} as deployed (a full GC before each part); RSS before compacting ${Math.round(m.baselineRssMb)} MB` },
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
