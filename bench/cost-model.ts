/**
 * The cost model (`npm run bench -- cost`): what a million traces cost, line by line, from list prices, and how fresh
 * the views are, for the two traffic shapes of issue 20 and each landing candidate. A virtual clock drives the real
 * landing use case, the real compaction planner and the real worker over an in-memory bucket that counts S3
 * requests. A stretch of steady traffic is simulated and scaled to an hour (every scaling is per trace, per slice
 * or per object, named beside its line); AWS latency and the parts of candidates that are not built are
 * assumptions, marked "modelled". The part workers are built, but their time is modelled from the single-worker
 * rates measured here (the stretch is too short to hold an hour that needs them).
 */
import { DEFAULT_SETTLE_MS } from '../lambda/compaction/compact-pending.js';
import { DEFAULT_BYTES_PER_PART, DEFAULT_ROWS_PER_PART } from '../lambda/lake/lifecycle/compact-slice.js';
import { DEFAULT_PART_WORKER_BYTES, partWorkersFor } from '../lambda/lake/lifecycle/part-plan.js';
import { DEFAULT_UPLOAD_PART_BYTES } from '../lambda/lake/lifecycle/streamed-object.js';
import { bucketAlignedParts, hashBlockCount, isBucketAligned } from '../lambda/datasets/hash-parts.js';
import { RAW_RETENTION_DAYS } from '../lib/constructs/landing.js';
import { CountingBucket } from './cost/counting-bucket.js';
import { KINESIS_SHARD_LIMITS, LAMBDA_MB_PER_VCPU, PRICES } from './cost/prices.js';
import { type CompactionRunMeasure, type ComputeScale, type LandingRun, S3_REQUEST_MS, type StreamConsumer, compactTraffic, landTraffic } from './cost/simulation.js';
import { type IngestSample, type Partitioning, SHAPES, type SimulatedRecord, TRACES_PER_REQUEST, type TrafficShape, sampleIngest, simulatedTraffic } from './cost/traffic.js';
import { percentile, round } from './engines-util.js';
import type { BenchResult } from './types.js';

const MILLION = 1e6;
const GIB = 1024 ** 3;
const HOUR_MS = 3_600_000;
const START_MS = Date.parse('2026-11-25T10:00:00Z');

/** Function sizes as deployed (docs/deploy.md): ingest and landing 1,024 MB, compaction worker 3,008 MB, planner 2,048 MB. */
const MEMORY_MB = { ingest: 1024, landing: 1024, worker: 3008, planner: 2048 } as const;
/** A provisioned stream sized at half its shards' limits (docs/deploy.md, "Cost model"): room for bursts and a shard's catch-up. */
const SHARD_UTILISATION = 0.5;
/** The slowest hour one compaction worker can finish: its 15-minute timeout. */
const WORKER_TIMEOUT_MS = 15 * 60_000;

/** Assumptions that cannot be measured on this machine, each used once below. */
const ASSUMED = {
  /** AWS calls of one ingest request (key and org reads mostly cached, the rate-window transaction, PutRecords of 100 records). */
  ingestAwsMs: 40,
  /** Rate windows: one transaction of 4 windows + a marker per request (2 WRU per item), the light-organization case of docs/deploy.md. */
  dynamoWriteUnitsPerRequest: 10,
  /** Key and organization lookups missed by the 30 s cache: at most two eventually consistent reads (half a unit each, rounded up). */
  dynamoReadUnitsPerRequest: 2,
  /** CloudWatch Logs: API access log ~0.5 KB + ingest function log ~1.3 KB per request; ~1 KB per other invocation. */
  logBytesPerRequest: 1800,
  logBytesPerInvocation: 1000,
  /** SQS FIFO requests per compacted slice: a tenth of a SendMessageBatch, the receive, the delete. */
  sqsRequestsPerSlice: 2.1,
  /** A typical query: one organization's last 24 h of spans by model (tokens, p95 duration, errors), once an hour per active organization. */
  queryColumns: ['timestamp', 'model', 'kind', 'status', 'total_tokens', 'duration_ms'],
  queriesPerOrganizationHour: 1,
  /** GETs Athena makes per Parquet object it opens (footer, then the column chunks it needs); one per manifest. */
  athenaGetsPerParquetObject: 2,
} as const;

const lambdaMs = (memoryMb: number): ComputeScale => (cpuMicros) => (cpuMicros / 1000) * Math.max(1, LAMBDA_MB_PER_VCPU / memoryMb);
const gbSeconds = (ms: number, memoryMb: number) => (ms / 1000) * (memoryMb / 1024);
const listPages = (keys: number) => Math.max(1, Math.ceil(keys / 1000));
/** PUT-class requests of writing one object: one PUT below the multipart part size, else create + parts + complete. */
const objectPuts = (bytes: number) => (bytes < DEFAULT_UPLOAD_PART_BYTES ? 1 : Math.ceil(bytes / DEFAULT_UPLOAD_PART_BYTES) + 2);

/** Simulated stretch per shape: several full batches per shard; everything per trace is scaled from it. */
const STRETCH_SECONDS: Record<string, number> = { [SHAPES[0]!.name]: 15, [SHAPES[1]!.name]: 10 };
/** Slices the worker compacts in the sample; the others cost the same per row and per object. */
const SLICE_SAMPLE = 20;

/** How a candidate lands and compacts; see CANDIDATES. */
type Layout = 'per-organization' | 'shared' | 'shared-fan-out';

interface Candidate {
  id: string;
  name: string;
  layout: Layout;
  /** How ingest picks partition keys (the shared layouts land by shard whatever the keys). */
  partitioning: Partitioning;
  consumer: StreamConsumer;
  /** Compaction of open hours every this many minutes instead of closed hours only ("compaction sooner"). */
  compactOpenHoursEveryMinutes?: number;
  /**
   * A slice-hour one worker could not finish in {@link SPLIT_AFTER_MS} is compacted by several part workers (built:
   * lambda/compaction/plan-part-workers.ts, part-workers.ts; their time modelled from the measured rates).
   */
  splitLargeHours?: boolean;
  /** Seconds between fan-out runs (shared-fan-out). */
  fanOutSeconds?: number;
  built: boolean;
  /** The candidate whose measured landing and compaction this one starts from (it lands the same way). */
  landsLike?: string;
}

const FIVE_SECONDS: StreamConsumer = { batchingWindowSeconds: 5, batchSize: 1000 };
/** The design before issue 20, the baseline every candidate is compared with. */
const BEFORE = 'before';
export const CANDIDATES: readonly Candidate[] = [
  { id: BEFORE, name: 'per-organization objects, trace-id partition keys, 5 s window (before)', layout: 'per-organization', partitioning: 'trace', consumer: FIVE_SECONDS, built: true },
  { id: 'window-30s', name: 'per-organization objects, trace-id keys, 30 s window', layout: 'per-organization', partitioning: 'trace', consumer: { batchingWindowSeconds: 30, batchSize: 10_000 }, built: true },
  { id: 'sooner', name: 'per-organization objects, trace-id keys, open hours compacted every 5 min', layout: 'per-organization', partitioning: 'trace', consumer: FIVE_SECONDS, compactOpenHoursEveryMinutes: 5, built: false, landsLike: BEFORE },
  { id: 'shared', name: 'one object per shard batch, organization as a column in its own row groups, per-hour index', layout: 'shared', partitioning: 'trace', consumer: FIVE_SECONDS, built: false },
  { id: 'fan-out', name: 'one object per shard batch, fanned out per organization every 30 s', layout: 'shared-fan-out', partitioning: 'trace', consumer: FIVE_SECONDS, fanOutSeconds: 30, built: false },
  {
    id: 'request-keys',
    name: 'per-organization objects, one partition key per request chunk, large groups in hash-ordered row groups, 5 s window (built)',
    layout: 'per-organization',
    partitioning: 'request',
    consumer: FIVE_SECONDS,
    built: true,
  },
  {
    id: 'request-keys+part-workers',
    name: 'the built design, and a large hour compacted by one worker per hash part (chosen; built, the part workers\' time modelled)',
    layout: 'per-organization',
    partitioning: 'request',
    consumer: FIVE_SECONDS,
    splitLargeHours: true,
    built: true,
    landsLike: 'request-keys',
  },
];

/** The built candidate whose run stands for this one; the shared layouts take the compaction measured before. */
const measuredAs = (candidate: Candidate) => (candidate.layout === 'per-organization' ? (candidate.landsLike ?? candidate.id) : BEFORE);

/** Past this, one slice-hour is split across part workers (splitLargeHours): well inside the worker's 15-minute timeout. */
const SPLIT_AFTER_MS = 10 * 60_000;

/** The simulated stretch of one shape, shared by every candidate. */
interface ShapeTraffic {
  shape: TrafficShape;
  shards: number;
  seconds: number;
  meanStreamBytes: number;
  /** Records as ingest writes them (each with its organization), by how ingest picks partition keys. */
  records: Record<Partitioning, SimulatedRecord[]>;
  /** The same traffic with one organization written into every record: the landing then groups by shard, batch and hour only. */
  sharedRecords: SimulatedRecord[];
}

function shapeTraffic(shape: TrafficShape, sample: IngestSample): ShapeTraffic {
  const tracesPerSecond = shape.organizations * shape.tracesPerSecondPerOrganization;
  const seconds = STRETCH_SECONDS[shape.name]!;
  const probe = simulatedTraffic({ ...shape, organizations: 1, tracesPerSecondPerOrganization: 100 }, sample, 1, START_MS, 1);
  const meanStreamBytes = probe.reduce((sum, record) => sum + record.streamBytes, 0) / probe.length;
  const shards = Math.max(
    Math.ceil((tracesPerSecond * meanStreamBytes) / (KINESIS_SHARD_LIMITS.bytesPerSecond * SHARD_UTILISATION)),
    Math.ceil(tracesPerSecond / (KINESIS_SHARD_LIMITS.recordsPerSecond * SHARD_UTILISATION)),
  );
  return {
    shape,
    shards,
    seconds,
    meanStreamBytes,
    records: {
      trace: simulatedTraffic(shape, sample, shards, START_MS, seconds, { partitioning: 'trace' }),
      request: simulatedTraffic(shape, sample, shards, START_MS, seconds, { partitioning: 'request' }),
    },
    sharedRecords: simulatedTraffic(shape, sample, shards, START_MS, seconds, { recordOrganization: 'shared' }),
  };
}

/** What the real code did on the stretch, per shape: the landing and compaction of each built candidate, the shared landing. */
interface Measured {
  perOrganization: Map<string, { landing: LandingRun; compaction: CompactionRunMeasure }>;
  shared: LandingRun;
}

/** An hour of steady traffic: what each function and S3 do, from which the lines are priced. */
interface HourlyUsage {
  landing: { invocations: number; ms: number; puts: number };
  /** Objects readers and compaction see per organization-hour and dataset. */
  objectsPerSliceHour: number;
  /** Objects the landing writes per hour (both datasets). */
  landedObjects: number;
  fanOut?: { invocations: number; ms: number; puts: number; gets: number };
  worker: { invocations: number; ms: number; puts: number; gets: number; lists: number; longestMs: number };
  planner: { invocations: number; ms: number; lists: number; gets: number };
  query: { gets: number; scannedBytes: number };
  freshnessMs: number[];
  notes: string[];
}

interface Scaling {
  tracesPerHour: number;
  slicesPerHour: number;
  tracesPerSliceHour: number;
  /** Per trace: raw bytes landed; compacted bytes; rows read by compaction; the spans' share of the raw bytes. */
  rawBytesPerTrace: number;
  compactedBytesPerTrace: { traces: number; spans: number };
  spanRowsPerTrace: number;
  spansShare: number;
  workerCpuPerRow: number;
  /** CPU to decode one raw row once, without keeping it: the cost of every hash part beyond the first. */
  decodeCpuPerRow: number;
  queryBytesPerSpanRow: number;
}

function scalingOf(shape: TrafficShape, measured: Measured, candidateId: string): Scaling {
  const { landing: current, compaction } = measured.perOrganization.get(candidateId)!;
  const tracesPerHour = shape.organizations * shape.tracesPerSecondPerOrganization * 3600;
  // The sampled slices hold this share of the landed traces (the organizations send alike).
  const sampledTraces = (current.traces * compaction.slicesCompacted) / compaction.slicesPlanned;
  return {
    tracesPerHour,
    slicesPerHour: shape.organizations, // every organization sends every hour in both shapes
    tracesPerSliceHour: tracesPerHour / shape.organizations,
    rawBytesPerTrace: current.bytesWritten / current.traces,
    compactedBytesPerTrace: { traces: compaction.compactedBytes.traces / sampledTraces, spans: compaction.compactedBytes.spans / sampledTraces },
    spanRowsPerTrace: compaction.rowsRead / sampledTraces - 1,
    spansShare: compaction.rawBytes.spans / (compaction.rawBytes.spans + compaction.rawBytes.traces),
    workerCpuPerRow: compaction.workerCpuMicros / compaction.rowsRead,
    decodeCpuPerRow: compaction.decodeCpuMicros / compaction.decodedRows,
    queryBytesPerSpanRow: compaction.spansColumnBytes.bytes / compaction.spansColumnBytes.rows,
  };
}

/**
 * One compaction of a slice-hour as `compactSlice` runs it (lambda/lake/lifecycle/compact-slice.ts): per dataset the hour
 * is cut into max(rows / 250,000, bytes / 32 MiB) hash parts; every part decodes every input (keeping its own rows),
 * inputs are read once when they total ≤ 32 MiB and once per part (plus once for the row count) otherwise; one
 * compacted object per dataset (multipart above 8 MiB) and the manifest; the raw and compacted prefixes listed.
 */
function sliceCompaction(s: Scaling, inputsPerDataset: number, traces: number, previousTraces = 0, blocks = 1) {
  let ms = 0;
  let gets = 1;
  let puts = 1;
  let lists = 0;
  for (const dataset of ['traces', 'spans'] as const) {
    const share = dataset === 'spans' ? s.spansShare : 1 - s.spansShare;
    const bytes = s.rawBytesPerTrace * (traces + previousTraces) * share;
    const rows = (traces + previousTraces) * (dataset === 'spans' ? s.spanRowsPerTrace : 1);
    const parts = bucketAlignedParts(Math.max(1, Math.ceil(rows / DEFAULT_ROWS_PER_PART), Math.ceil(bytes / DEFAULT_BYTES_PER_PART)));
    const inputs = inputsPerDataset + (previousTraces > 0 ? 1 : 0);
    gets += inputs * (bytes <= DEFAULT_BYTES_PER_PART ? 1 : 1 + parts);
    puts += objectPuts(s.compactedBytesPerTrace[dataset] * (traces + previousTraces));
    lists += listPages(inputsPerDataset) + 1;
    // Every part decodes the row groups that can hold its rows (every input whole, unless hash-ordered) and keeps its
    // own: the first pass costs the full rate, each further decode of a row the decode rate.
    ms += lambdaMs(MEMORY_MB.worker)(s.workerCpuPerRow * rows + s.decodeCpuPerRow * rows * (parts * decodedShare(parts, blocks) - 1));
  }
  ms += S3_REQUEST_MS * (lists + puts + 1 + Math.ceil(gets / 16));
  return { ms, gets, puts, lists };
}

/**
 * A slice-hour compacted by W part workers at once (built; its time modelled from the measured rates): W a power of
 * two, worker w taking the hash parts whose orders fall in its w-th of the range (one contiguous run of each
 * hash-ordered input's row groups), cutting them into its own parts as `compactSlice` does, and writing its own object
 * per dataset; the switch writes the manifest naming the W objects. Counted here: two GETs per input and worker (the
 * built worker makes one: a whole GET of each raw object, of which it keeps its range's row groups across its parts,
 * `retainShare`). W is the fewest workers that each finish within SPLIT_AFTER_MS; the planner's own rule is by listed
 * bytes (`partWorkersFor`), and the note printed with the shape says whether the two agree.
 */
function splitSliceCompaction(s: Scaling, inputsPerDataset: number, traces: number, blocks: number) {
  const workerMs = (workers: number) => {
    let ms = 0;
    for (const dataset of ['traces', 'spans'] as const) {
      const rows = traces * (dataset === 'spans' ? s.spanRowsPerTrace : 1);
      const parts = bucketAlignedParts(Math.max(workers, Math.ceil(rows / DEFAULT_ROWS_PER_PART)));
      // Its parts each decode the row groups that can hold their rows; the first decode of a row is in the full rate.
      ms += lambdaMs(MEMORY_MB.worker)(s.workerCpuPerRow * (rows / workers) + s.decodeCpuPerRow * rows * Math.max(0, (parts / workers) * decodedShare(parts, blocks) - 1 / workers));
    }
    return ms + S3_REQUEST_MS * (Math.ceil((2 * 2 * inputsPerDataset) / 16) + 4);
  };
  let workers = 1;
  while (workers < 128 && workerMs(workers) > SPLIT_AFTER_MS) workers *= 2;
  const longestMs = workerMs(workers);
  const gets = workers * 2 * inputsPerDataset * (blocks > 1 ? 2 : 1) + 1;
  const puts = workers * 2 + 1;
  return { parts: workers, ms: workers * longestMs + S3_REQUEST_MS * 4, longestMs, gets, puts, lists: 2 * listPages(inputsPerDataset) + 2 };
}

/** The share of an input's rows one part decodes: all, or with hash-ordered inputs the row groups of its blocks. */
const decodedShare = (parts: number, blocks: number) => (blocks > 1 && isBucketAligned(parts) ? Math.max(1 / parts, 1 / blocks) : 1);

/** Every run of the planner lists every raw object kept, organization by organization, and reads the manifest of every closed hour in the listing. */
function plannerRun(organizations: number, objectsPerOrganizationDatasetHour: number, extraLists = 0) {
  const retainedHours = RAW_RETENTION_DAYS * 24;
  const lists = 2 * listPages(organizations) + organizations * 2 * listPages(objectsPerOrganizationDatasetHour * retainedHours) + extraLists;
  const gets = organizations * retainedHours;
  return { lists, gets, ms: S3_REQUEST_MS * (lists / 4 + gets / 16) };
}

/** Uncompacted at a random moment: half the open hour, and the last closed hour until its compaction (settle + half the planner interval + the work). */
const uncompactedHours = (plannerMinutes: number, workMs: number) => 0.5 + (DEFAULT_SETTLE_MS / 60_000 + plannerMinutes / 2 + workMs / 60_000) / 60;

function usageOf(candidate: Candidate, traffic: ShapeTraffic, measured: Measured): HourlyUsage {
  const { shape } = traffic;
  const s = scalingOf(shape, measured, measuredAs(candidate));
  const notes: string[] = [];
  const before = measured.perOrganization.get(BEFORE)!.landing;
  const landed = candidate.layout === 'per-organization' ? measured.perOrganization.get(measuredAs(candidate))!.landing : measured.shared;
  const perHour = (x: number) => (x / landed.traces) * s.tracesPerHour;
  // Pairs of (organization, shard batch): the per-organization objects of the landing before, halved per dataset.
  const pairsPerSliceHour = (before.objects / before.traces) * s.tracesPerHour / s.slicesPerHour / 2;
  const landing = { invocations: perHour(landed.invocations), ms: perHour(landed.landingMs), puts: perHour(landed.requests.put) };
  const queryScanned = Math.max(PRICES.athenaMinimumBytesPerQuery, s.queryBytesPerSpanRow * s.tracesPerSliceHour * 24 * s.spanRowsPerTrace);
  const queryGets = (parquetObjectsOpened: number) => ASSUMED.athenaGetsPerParquetObject * (24 + parquetObjectsOpened) + 24;

  if (candidate.layout === 'per-organization') {
    const objectsPerSliceHour = perHour(landed.objects) / s.slicesPerHour / 2;
    // Hash blocks of the landed groups (the landing's own rule, from their measured size); the trace-keyed candidates
    // stand for the landing before, which wrote every group in arrival order.
    const blocks = candidate.partitioning === 'request' ? hashBlockCount((s.spanRowsPerTrace * landed.traces) / (landed.objects / 2)) : 1;
    if (blocks > 1) notes.push(`landed groups of ~${round((s.spanRowsPerTrace * landed.traces) / (landed.objects / 2))} span rows, in ${blocks} hash blocks`);
    const every = candidate.compactOpenHoursEveryMinutes;
    let worker: HourlyUsage['worker'];
    let planner: HourlyUsage['planner'];
    let uncompacted: number;
    if (every) {
      // Modelled: every run folds the new raw objects into a new generation, rereading the hour so far.
      const runs = 60 / every;
      let ms = 0, gets = 0, puts = 0, lists = 0, longestMs = 0;
      for (let run = 1; run <= runs; run++) {
        const one = sliceCompaction(s, objectsPerSliceHour / runs, s.tracesPerSliceHour / runs, (s.tracesPerSliceHour * (run - 1)) / runs);
        ms += one.ms; gets += one.gets; puts += one.puts; lists += one.lists; longestMs = Math.max(longestMs, one.ms);
      }
      worker = { invocations: runs * s.slicesPerHour, ms: ms * s.slicesPerHour, gets: gets * s.slicesPerHour, puts: puts * s.slicesPerHour, lists: lists * s.slicesPerHour, longestMs };
      const run = plannerRun(shape.organizations, objectsPerSliceHour);
      planner = { invocations: runs, ms: run.ms * runs, lists: run.lists * runs, gets: run.gets * runs };
      uncompacted = (every / 2 + longestMs / 60_000) / 60;
      notes.push(`modelled: open hours compacted every ${every} min, each run rereading the hour's previous generation`);
    } else {
      const one = sliceCompaction(s, objectsPerSliceHour, s.tracesPerSliceHour, 0, blocks);
      worker = { invocations: s.slicesPerHour, ms: one.ms * s.slicesPerHour, gets: one.gets * s.slicesPerHour, puts: one.puts * s.slicesPerHour, lists: one.lists * s.slicesPerHour, longestMs: one.ms };
      if (candidate.splitLargeHours && one.ms > SPLIT_AFTER_MS) {
        const split = splitSliceCompaction(s, objectsPerSliceHour, s.tracesPerSliceHour, blocks);
        worker = { invocations: (split.parts + 1) * s.slicesPerHour, ms: split.ms * s.slicesPerHour, gets: split.gets * s.slicesPerHour, puts: split.puts * s.slicesPerHour, lists: split.lists * s.slicesPerHour, longestMs: split.longestMs };
        notes.push(`part workers (built; time modelled): each slice-hour split across ${split.parts} part workers (one worker alone: ${round(one.ms / 60_000)} min)`);
        const listedBytes = s.rawBytesPerTrace * s.tracesPerSliceHour;
        notes.push(`the planner's rule (${DEFAULT_PART_WORKER_BYTES / 2 ** 20} MiB of listed input a worker) gives ${partWorkersFor(listedBytes)} part workers for this hour's ${round(listedBytes / 1e9, 2)} GB of raw objects`);
      }
      const run = plannerRun(shape.organizations, objectsPerSliceHour);
      planner = { invocations: 4, ms: run.ms * 4, lists: run.lists * 4, gets: run.gets * 4 };
      uncompacted = uncompactedHours(15, one.ms);
    }
    return {
      landing,
      objectsPerSliceHour,
      landedObjects: perHour(landed.objects),
      worker,
      planner,
      query: { gets: queryGets(objectsPerSliceHour * uncompacted), scannedBytes: queryScanned },
      freshnessMs: landed.freshnessMs,
      notes,
    };
  }

  const sharedObjectsPerHour = perHour(landed.objects); // both datasets
  if (candidate.layout === 'shared') {
    // Modelled: + one index object per landing; each organization's hour read by one ranged GET per shard batch
    // that holds it (its row groups, found in the index); the planner lists the shared prefix and reads each index once.
    const indexPuts = landing.invocations;
    const one = sliceCompaction(s, pairsPerSliceHour, s.tracesPerSliceHour);
    const retainedShared = (sharedObjectsPerHour / 2) * RAW_RETENTION_DAYS * 24;
    notes.push('modelled: index objects, compaction by ranged reads through the index, views over the shared objects (Athena opens every shared object of an uncompacted hour: row-group statistics prune rows, not objects)');
    return {
      landing: { ...landing, puts: landing.puts + indexPuts },
      objectsPerSliceHour: pairsPerSliceHour,
      landedObjects: sharedObjectsPerHour + indexPuts,
      worker: { invocations: s.slicesPerHour, ms: one.ms * s.slicesPerHour, gets: one.gets * s.slicesPerHour, puts: one.puts * s.slicesPerHour, lists: one.lists * s.slicesPerHour, longestMs: one.ms },
      planner: { invocations: 4, ms: 4 * S3_REQUEST_MS * (listPages(retainedShared) * 2 + indexPuts / 4 / 16), lists: 4 * 2 * listPages(retainedShared), gets: indexPuts },
      query: { gets: queryGets((sharedObjectsPerHour / 2) * uncompactedHours(15, one.ms)), scannedBytes: queryScanned },
      freshnessMs: landed.freshnessMs,
      notes,
    };
  }

  // shared-fan-out (modelled): every fanOutSeconds one run reads the shard batches landed since the last and writes
  // one object per dataset for each organization in them, under the organization's raw prefix, which compaction,
  // the views and the planner use as today. A large organization's objects are split by a hash of trace_id into
  // buckets of ≤ 250,000 span rows an hour, each compacted by its own worker (linear, within the timeout).
  const every = candidate.fanOutSeconds!;
  const windowMs = every * 1000;
  // Organizations per run: each request's traces land within a few seconds of each other (one batch per shard);
  // a request whose traces straddle a run boundary appears in two runs. Spread measured on the landed stretch.
  const byRequest = new Map<string, { first: number; last: number }>();
  for (const [record, visibleAt] of landed.visibleAtMs) {
    const key = `${record.orgId} ${record.acceptedAtMs}`;
    const seen = byRequest.get(key);
    byRequest.set(key, seen ? { first: Math.min(seen.first, visibleAt), last: Math.max(seen.last, visibleAt) } : { first: visibleAt, last: visibleAt });
  }
  const meanSpreadMs = [...byRequest.values()].reduce((sum, r) => sum + r.last - r.first, 0) / byRequest.size;
  const requestsPerOrganizationHour = s.tracesPerSliceHour / TRACES_PER_REQUEST;
  const orgWindowsPerHour = shape.organizations * Math.min(3600 / every, requestsPerOrganizationHour * (1 + meanSpreadMs / windowMs));
  const tracesPerFanOut = s.tracesPerHour / (3600 / every);
  const orgWindows = orgWindowsPerHour / (3600 / every);
  const buckets = Math.max(1, Math.ceil((s.tracesPerSliceHour * s.spanRowsPerTrace) / DEFAULT_ROWS_PER_PART));
  const fanOutsPerHour = 3600 / every;
  const fanOutMs = lambdaMs(MEMORY_MB.worker)(s.workerCpuPerRow * tracesPerFanOut * (1 + s.spanRowsPerTrace));
  const sharedPerFanOut = sharedObjectsPerHour / fanOutsPerHour;
  const fanOut = {
    invocations: fanOutsPerHour,
    ms: fanOutsPerHour * (fanOutMs + S3_REQUEST_MS * (1 + Math.ceil(sharedPerFanOut / 16) + Math.ceil((orgWindows * buckets * 2) / 16))),
    puts: fanOutsPerHour * orgWindows * buckets * 2,
    gets: fanOutsPerHour * sharedPerFanOut,
  };
  const objectsPerSliceHour = (fanOut.puts / s.slicesPerHour / 2);
  const bucketTraces = s.tracesPerSliceHour / buckets;
  const one = sliceCompaction(s, objectsPerSliceHour / buckets, bucketTraces);
  const run = plannerRun(shape.organizations, objectsPerSliceHour);
  const freshnessMs: number[] = [];
  for (const [record, visibleAt] of landed.visibleAtMs) {
    const tick = (Math.floor(visibleAt / windowMs) + 1) * windowMs;
    freshnessMs.push(tick + fanOutMs + S3_REQUEST_MS * 2 - record.acceptedAtMs);
  }
  notes.push(`modelled: fan-out every ${every} s (${round(orgWindows)} organizations per run measured from the landed traffic, ${buckets} hash bucket(s) per organization-hour)`);
  return {
    landing,
    objectsPerSliceHour,
    landedObjects: sharedObjectsPerHour + fanOut.puts,
    fanOut,
    worker: { invocations: s.slicesPerHour * buckets, ms: one.ms * s.slicesPerHour * buckets, gets: one.gets * s.slicesPerHour * buckets, puts: one.puts * s.slicesPerHour * buckets, lists: one.lists * s.slicesPerHour * buckets, longestMs: one.ms },
    planner: { invocations: 4, ms: run.ms * 4, lists: run.lists * 4, gets: run.gets * 4 },
    query: { gets: queryGets(objectsPerSliceHour * uncompactedHours(15, one.ms)), scannedBytes: queryScanned },
    freshnessMs,
    notes,
  };
}

export interface CostLine {
  line: string;
  perMillion: number;
  basis: string;
}

export interface ShapeCost {
  shape: string;
  candidate: Candidate;
  shards: number;
  lines: CostLine[];
  total: number;
  onDemandTotal: number;
  landingPutsPerMillion: number;
  objectsPerHour: number;
  freshness: { p50: number; p99: number; max: number };
  queryDollars: number;
  longestWorkerSeconds: number;
  notes: string[];
}

function priced(candidate: Candidate, traffic: ShapeTraffic, sample: IngestSample, measured: Measured): ShapeCost {
  const u = usageOf(candidate, traffic, measured);
  const s = scalingOf(traffic.shape, measured, measuredAs(candidate));
  const perMillion = (hourly: number) => (hourly / s.tracesPerHour) * MILLION;
  const lines: CostLine[] = [];
  const add = (line: string, dollars: number, basis: string) => lines.push({ line, perMillion: dollars, basis });
  const requests = MILLION / TRACES_PER_REQUEST;
  add('API Gateway (REST requests)', requests * PRICES.apiGatewayRestPerRequest, `${requests} requests of ${TRACES_PER_REQUEST} traces`);
  const ingestMs = lambdaMs(MEMORY_MB.ingest)(sample.cpuMicrosPerRequest) + ASSUMED.ingestAwsMs;
  add('Lambda ingest', requests * (PRICES.lambdaPerRequest + gbSeconds(ingestMs, MEMORY_MB.ingest) * PRICES.lambdaArmPerGbSecond), `${round(ingestMs)} ms a request at 1,024 MB (CPU measured + ${ASSUMED.ingestAwsMs} ms AWS calls assumed)`);
  const lambda = (invocations: number, ms: number, memoryMb: number) => perMillion(invocations * PRICES.lambdaPerRequest + gbSeconds(ms, memoryMb) * PRICES.lambdaArmPerGbSecond);
  add('Lambda landing', lambda(u.landing.invocations, u.landing.ms, MEMORY_MB.landing), `${round(perMillion(u.landing.invocations))} invocations, ${round(u.landing.ms / u.landing.invocations)} ms each at 1,024 MB`);
  if (u.fanOut) add('Lambda fan-out', lambda(u.fanOut.invocations, u.fanOut.ms, MEMORY_MB.worker), `${u.fanOut.invocations} runs an hour, ${round(u.fanOut.ms / u.fanOut.invocations / 1000, 2)} s each at 3,008 MB`);
  add(
    'Lambda compaction (workers + planner)',
    lambda(u.worker.invocations, u.worker.ms, MEMORY_MB.worker) + lambda(u.planner.invocations, u.planner.ms, MEMORY_MB.planner),
    `${round(u.worker.invocations)} slice runs an hour, ${round(u.worker.ms / u.worker.invocations / 1000, 2)} s each; planner ${round(u.planner.ms / u.planner.invocations / 1000, 1)} s a run`,
  );
  const shardHours = perMillion(traffic.shards);
  const payloadUnits = MILLION * Math.ceil(traffic.meanStreamBytes / (25 * 1024));
  add('Kinesis (provisioned)', shardHours * PRICES.kinesisShardHour + payloadUnits * PRICES.kinesisPutPayloadUnit, `${traffic.shards} shards at ≤ 50 % of their limits (${round(shardHours, 2)} shard-hours), ${round(traffic.meanStreamBytes / 1024, 2)} KB a record`);
  add('DynamoDB (rate windows, lookups)', requests * (ASSUMED.dynamoWriteUnitsPerRequest * PRICES.dynamoWriteRequestUnit + ASSUMED.dynamoReadUnitsPerRequest * PRICES.dynamoReadRequestUnit), `${ASSUMED.dynamoWriteUnitsPerRequest} WRU + ${ASSUMED.dynamoReadUnitsPerRequest} RRU a request (assumed)`);
  const landingPuts = perMillion(u.landing.puts);
  add('S3 requests: landing PUTs', landingPuts * PRICES.s3PutOrList, `${round(landingPuts)} PUTs`);
  if (u.fanOut) add('S3 requests: fan-out', perMillion(u.fanOut.puts) * PRICES.s3PutOrList + perMillion(u.fanOut.gets) * PRICES.s3Get, `${round(perMillion(u.fanOut.puts))} PUT, ${round(perMillion(u.fanOut.gets))} GET`);
  add('S3 requests: compaction workers', perMillion(u.worker.puts + u.worker.lists) * PRICES.s3PutOrList + perMillion(u.worker.gets) * PRICES.s3Get, `${round(perMillion(u.worker.gets))} GET, ${round(perMillion(u.worker.puts))} PUT, ${round(perMillion(u.worker.lists))} LIST`);
  add('S3 requests: compaction planner', perMillion(u.planner.lists) * PRICES.s3PutOrList + perMillion(u.planner.gets) * PRICES.s3Get, `${round(perMillion(u.planner.lists))} LIST, ${round(perMillion(u.planner.gets))} GET (each run lists ${RAW_RETENTION_DAYS} days of raw objects)`);
  const compacted = s.compactedBytesPerTrace.traces + s.compactedBytesPerTrace.spans;
  add(
    'S3 storage (one month)',
    ((compacted * MILLION) / GIB) * PRICES.s3StandardGbMonth + ((s.rawBytesPerTrace * MILLION) / GIB) * PRICES.s3StandardGbMonth * (RAW_RETENTION_DAYS / 30.4),
    `${round((compacted * MILLION) / GIB, 2)} GB compacted kept a month, ${round((s.rawBytesPerTrace * MILLION) / GIB, 2)} GB raw kept ${RAW_RETENTION_DAYS} days`,
  );
  add('SQS (compaction queue)', perMillion(u.worker.invocations * ASSUMED.sqsRequestsPerSlice * PRICES.sqsFifoPerRequest), `${ASSUMED.sqsRequestsPerSlice} FIFO requests a slice run`);
  const logBytes = requests * ASSUMED.logBytesPerRequest + perMillion(u.landing.invocations + u.worker.invocations + (u.fanOut?.invocations ?? 0)) * ASSUMED.logBytesPerInvocation;
  add('CloudWatch Logs', (logBytes / GIB) * PRICES.cloudWatchLogsPerGb, `${ASSUMED.logBytesPerRequest} B a request, ${ASSUMED.logBytesPerInvocation} B an invocation`);
  const queryDollars = (u.query.scannedBytes / 1024 ** 4) * PRICES.athenaPerTbScanned + u.query.gets * PRICES.s3Get;
  const queries = perMillion(traffic.shape.organizations * ASSUMED.queriesPerOrganizationHour);
  add('Athena (typical query: scanned + its S3 GETs)', queries * queryDollars, `${round(queries, 1)} queries (one per organization-hour), each ${round(u.query.scannedBytes / 1024 ** 2, 1)} MB billed + ${round(u.query.gets)} GETs = $${queryDollars.toFixed(6)}`);
  const total = lines.reduce((sum, line) => sum + line.perMillion, 0);
  const provisioned = lines.find((line) => line.line.startsWith('Kinesis'))!.perMillion;
  const inGb = (MILLION * Math.ceil(traffic.meanStreamBytes / 1024) * 1024) / GIB;
  const onDemand = inGb * PRICES.kinesisOnDemandInPerGb + ((MILLION * traffic.meanStreamBytes) / GIB) * PRICES.kinesisOnDemandOutPerGb + perMillion(1) * PRICES.kinesisOnDemandStreamHour;
  return {
    shape: traffic.shape.name,
    candidate,
    shards: traffic.shards,
    lines,
    total,
    onDemandTotal: total - provisioned + onDemand,
    landingPutsPerMillion: landingPuts,
    objectsPerHour: u.landedObjects,
    freshness: { p50: percentile(u.freshnessMs, 50), p99: percentile(u.freshnessMs, 99), max: Math.max(...u.freshnessMs) },
    queryDollars,
    longestWorkerSeconds: u.worker.longestMs / 1000,
    notes: [
      ...u.notes,
      ...(u.worker.longestMs > WORKER_TIMEOUT_MS ? [`one slice-hour takes ${round(u.worker.longestMs / 60_000)} min of one worker: over its 15-minute timeout, so it never compacts as built`] : []),
      `on-demand stream instead: $${onDemand.toFixed(4)} for the stream line (data in whole KB per record, data out, stream hours)`,
    ],
  };
}

/** Runs the real code on one shape's stretch: the landing of each built per-organization candidate, the shared landing, one compaction. */
async function measure(traffic: ShapeTraffic): Promise<Measured> {
  const end = START_MS + traffic.seconds * 1000;
  const perOrganization: Measured['perOrganization'] = new Map();
  for (const candidate of CANDIDATES.filter((c) => c.layout === 'per-organization' && c.built && !c.landsLike)) {
    const bucket = new CountingBucket();
    const landing = await landTraffic(bucket, traffic.records[candidate.partitioning], traffic.shards, candidate.consumer, end, lambdaMs(MEMORY_MB.landing));
    const compaction = await compactTraffic(bucket, START_MS + HOUR_MS + DEFAULT_SETTLE_MS + 60_000, SLICE_SAMPLE, ASSUMED.queryColumns);
    perOrganization.set(candidate.id, { landing, compaction });
  }
  const shared = await landTraffic(new CountingBucket(), traffic.sharedRecords, traffic.shards, FIVE_SECONDS, end, lambdaMs(MEMORY_MB.landing));
  return { perOrganization, shared };
}

export async function modelCosts(): Promise<ShapeCost[]> {
  const sample = await sampleIngest();
  const costs: ShapeCost[] = [];
  for (const shape of SHAPES) {
    const traffic = shapeTraffic(shape, sample);
    const measured = await measure(traffic);
    for (const candidate of CANDIDATES) costs.push(priced(candidate, traffic, sample, measured));
  }
  return costs;
}

export async function runCostModelBench(): Promise<BenchResult[]> {
  const costs = await modelCosts();
  const results: BenchResult[] = [];
  for (const cost of costs) {
    console.log(`\n${cost.shape} — ${cost.candidate.name}${cost.candidate.built ? '' : ' [modelled where not built]'} (${cost.shards} provisioned shards)`);
    console.table(cost.lines.map((line) => ({ line: line.line, 'per million traces': `$${line.perMillion.toFixed(4)}`, basis: line.basis })));
    console.log(
      `total $${cost.total.toFixed(3)} (on-demand stream: $${cost.onDemandTotal.toFixed(3)}); landing PUTs ${round(cost.landingPutsPerMillion)} per million traces; ` +
        `objects written by the landing ${round(cost.objectsPerHour)} an hour; freshness p50 ${round(cost.freshness.p50 / 1000)} s, p99 ${round(cost.freshness.p99 / 1000)} s, max ${round(cost.freshness.max / 1000)} s; ` +
        `longest slice run ${round(cost.longestWorkerSeconds)} s; typical query $${cost.queryDollars.toFixed(6)}`,
    );
    for (const note of cost.notes) console.log(`  ${note}`);
    const metric = `${cost.shape}, ${cost.candidate.id}`;
    results.push(
      { group: 'cost', metric: `${metric}: all-in per million traces (provisioned stream)`, value: round(cost.total, 3), unit: '$', target: '<= 0.50', note: !cost.candidate.built ? 'modelled where not built' : cost.candidate.splitLargeHours ? 'measured; the part workers\' time modelled' : 'measured' },
      { group: 'cost', metric: `${metric}: landing PUTs per million traces`, value: round(cost.landingPutsPerMillion), unit: 'PUTs' },
      { group: 'cost', metric: `${metric}: objects written by the landing per hour`, value: round(cost.objectsPerHour), unit: 'objects' },
      { group: 'cost', metric: `${metric}: freshness p99 (accept → visible in the views)`, value: round(cost.freshness.p99 / 1000, 1), unit: 's', target: '<= 60' },
    );
  }
  return results;
}
