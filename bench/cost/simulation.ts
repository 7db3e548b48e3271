import { parquetMetadataAsync } from 'hyparquet';
import { compactQueuedSlices } from '../../lambda/compaction/compact-queued-slices.js';
import { readRowGroups } from '../../lambda/lake/lifecycle/parquet-rows.js';
import { SPANS, TRACES } from '../../lambda/datasets/registry.js';
import { planCompaction } from '../../lambda/compaction/plan-compaction.js';
import type { SliceMessage } from '../../lambda/compaction/slice-message.js';
import { landRecords } from '../../lambda/landing/land-records.js';
import type { LandingRecord } from '../../lambda/landing/landing-types.js';
import { cpuMicrosAsync } from '../engines-util.js';
import { CountingBucket, type RequestCounts } from './counting-bucket.js';
import type { SimulatedRecord } from './traffic.js';

/**
 * The Kinesis event source mapping as the model runs it (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html,
 * "Polling and batching streams"): Lambda reads each shard about once a second and invokes the function when the
 * batching window has passed since the first record it holds, when it holds `batchSize` records, or when the next
 * record would take the invocation's payload past 6 MB; with `ParallelizationFactor` 1 a shard has one invocation at
 * a time, so a batch also waits for the previous one to end.
 */
export interface StreamConsumer {
  batchingWindowSeconds: number;
  batchSize: number;
}

/** The synchronous invocation payload limit (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html). */
const MAX_EVENT_BYTES = 6 * 1024 * 1024;
const POLL_INTERVAL_MS = 1000;

/** Bytes of one Kinesis event record around its base64 data (ids, ARNs, field names), as the event source sends it. */
const EVENT_RECORD_ENVELOPE_BYTES = Buffer.byteLength(
  JSON.stringify({
    kinesis: { kinesisSchemaVersion: '1.0', partitionKey: '00000000-0000-4000-8000-000000000000', sequenceNumber: '4'.repeat(56), data: '', approximateArrivalTimestamp: 1764064800.123 },
    eventSource: 'aws:kinesis',
    eventVersion: '1.0',
    eventID: `shardId-000000000000:${'4'.repeat(56)}`,
    eventName: 'aws:kinesis:record',
    invokeIdentityArn: 'arn:aws:iam::123456789012:role/TraceIngest-LandingConsumerServiceRole0123456789-ABCDEFGHIJKL',
    awsRegion: 'us-east-1',
    eventSourceARN: 'arn:aws:kinesis:us-east-1:123456789012:stream/TraceIngest-TraceStream0123456789-ABCDEFGHIJKL',
  }),
);

/** Lambda's CPU share at a memory size, against one full core here (see `LAMBDA_MB_PER_VCPU`). */
export type ComputeScale = (cpuMicros: number) => number;

export interface LandingRun {
  traces: number;
  invocations: number;
  /** Lambda milliseconds of the landing, billed (CPU scaled to the function's share, plus S3 latency). */
  landingMs: number;
  objects: number;
  requests: RequestCounts;
  bytesWritten: number;
  /** Accept → visible in the views (the object holding the trace written), per trace, ms. */
  freshnessMs: number[];
  /** When each landed record's object was written (virtual ms). */
  visibleAtMs: Map<SimulatedRecord, number>;
  /** Event payload bytes per invocation, to check the 6 MB bound binds as the model says. */
  eventBytes: number[];
}

/** Assumed S3 round trip per request seen by a function (not measured here: there is no S3 on this machine). */
export const S3_REQUEST_MS = 25;

/**
 * Lands the traffic as the event source mapping would deliver it, shard by shard, through the real landing use case
 * (`landRecords`) into the counting bucket. Only batches whose invocation starts before the traffic ends are landed:
 * a batch cut short by the end of the simulated stretch would be smaller than in steady traffic.
 */
export async function landTraffic(
  bucket: CountingBucket,
  records: readonly SimulatedRecord[],
  shards: number,
  consumer: StreamConsumer,
  endMs: number,
  landingMs: ComputeScale,
): Promise<LandingRun> {
  const run: LandingRun = { traces: 0, invocations: 0, landingMs: 0, objects: 0, requests: { put: 0, get: 0, list: 0, delete: 0 }, bytesWritten: 0, freshnessMs: [], visibleAtMs: new Map(), eventBytes: [] };
  bucket.caller = 'landing';
  const before = { ...bucket.requests.landing };
  const objectsBefore = bucket.objects.size;
  const bytesBefore = bucket.bytesWritten.landing;
  for (let shard = 0; shard < shards; shard++) {
    const shardId = `shardId-${String(shard).padStart(12, '0')}`;
    const own = records.filter((record) => record.shard === shard);
    const seenAt = (record: SimulatedRecord) => Math.ceil(record.acceptedAtMs / POLL_INTERVAL_MS) * POLL_INTERVAL_MS;
    let next = 0;
    let freeAt = 0;
    while (next < own.length) {
      const deadline = Math.max(seenAt(own[next]!) + consumer.batchingWindowSeconds * 1000, freeAt);
      let end = next;
      let payload = 0;
      let invokeAt = deadline;
      while (end < own.length && seenAt(own[end]!) <= deadline) {
        const bytes = EVENT_RECORD_ENVELOPE_BYTES + Math.ceil(own[end]!.data.byteLength / 3) * 4;
        if (end - next === consumer.batchSize || payload + bytes > MAX_EVENT_BYTES) {
          invokeAt = Math.max(seenAt(own[end - 1]!), freeAt);
          break;
        }
        payload += bytes;
        end++;
      }
      if (invokeAt > endMs) break;
      const batch: LandingRecord[] = own.slice(next, end).map((record, i) => ({
        shardId,
        sequenceNumber: `4964${String(next + i).padStart(52, '0')}`,
        data: record.data,
        approximateArrivalTimestamp: new Date(record.acceptedAtMs),
      }));
      const puts = bucket.requests.landing.put;
      const cpu = await cpuMicrosAsync(() => landRecords({ store: bucket }, batch));
      // Uploads run four at a time beside the encoding (`maxUploadsInFlight`).
      const duration = landingMs(cpu) + Math.ceil((bucket.requests.landing.put - puts) / 4) * S3_REQUEST_MS;
      freeAt = invokeAt + duration;
      for (let i = next; i < end; i++) {
        run.freshnessMs.push(freeAt - own[i]!.acceptedAtMs);
        run.visibleAtMs.set(own[i]!, freeAt);
      }
      run.eventBytes.push(payload);
      run.invocations++;
      run.landingMs += duration;
      run.traces += end - next;
      next = end;
    }
  }
  for (const kind of ['put', 'get', 'list', 'delete'] as const) run.requests[kind] = bucket.requests.landing[kind] - before[kind];
  run.objects = bucket.objects.size - objectsBefore;
  run.bytesWritten = bucket.bytesWritten.landing - bytesBefore;
  return run;
}

export interface CompactionRunMeasure {
  slicesPlanned: number;
  slicesCompacted: number;
  planner: RequestCounts;
  plannerCpuMicros: number;
  worker: RequestCounts;
  workerCpuMicros: number;
  /** Rows the sampled workers read (both datasets, before deduplication). */
  rowsRead: number;
  /** Raw objects the sampled slices held (both datasets). */
  rawObjects: number;
  /** Bytes of the raw and compacted objects of the sampled slices, per dataset. */
  rawBytes: { traces: number; spans: number };
  compactedBytes: { traces: number; spans: number };
  /** Per compacted spans object: bytes of the column chunks a typical query reads, and its rows. */
  spansColumnBytes: { bytes: number; rows: number };
  /** CPU of only decoding the sampled slices' raw objects once, and the rows decoded: what each extra hash part costs. */
  decodeCpuMicros: number;
  decodedRows: number;
}

/**
 * Runs the real planner once the hour has closed, then the real worker on up to `sample` of the slices it planned,
 * over the counting bucket; the caller scales the sample to every slice.
 */
export async function compactTraffic(bucket: CountingBucket, nowMs: number, sample: number, queryColumns: readonly string[]): Promise<CompactionRunMeasure> {
  const messages: SliceMessage[] = [];
  bucket.caller = 'planner';
  const now = () => new Date(nowMs);
  let planned = 0;
  const plannerCpuMicros = await cpuMicrosAsync(async () => {
    const plan = await planCompaction({ store: bucket, now, organizations: bucket.organizations(), queue: { send: async (batch) => void messages.push(...batch) } });
    planned = Object.values(plan.planned).reduce((a, b) => a + b, 0);
  });
  bucket.caller = 'worker';
  const chosen = messages.slice(0, sample);
  const rawKeys = new Map<string, number>();
  for (const [key, object] of bucket.objects) if (/^(traces|spans)\//.test(key)) rawKeys.set(key, object.body.byteLength);
  let rowsRead = 0;
  let rawObjects = 0;
  const rawBytes = { traces: 0, spans: 0 };
  const compactedBytes = { traces: 0, spans: 0 };
  for (const message of chosen) {
    const slice = JSON.parse(message.body) as { org_id: string; dt: string; hour: string };
    const path = `org_id=${slice.org_id}/dt=${slice.dt}/hour=${slice.hour}/`;
    for (const [key, bytes] of rawKeys) {
      for (const dataset of ['traces', 'spans'] as const) {
        if (key.startsWith(`${dataset}/${path}`)) {
          rawObjects++;
          rawBytes[dataset] += bytes;
        }
      }
    }
  }
  const workerCpuMicros = await cpuMicrosAsync(async () => {
    for (const [i, message] of chosen.entries()) {
      const outcome = await compactQueuedSlices({ store: bucket, now }, [{ messageId: String(i), body: message.body }]);
      if (outcome.failed.length > 0) throw new Error(`cost model: compaction failed: ${outcome.failed[0]!.error}`);
      for (const done of outcome.compacted) rowsRead += done.rowsRead;
    }
  });
  // What a hash part beyond the first costs: decoding every input again to find its own rows.
  let decodedRows = 0;
  const sampledRaw = [...rawKeys.keys()].filter((key) => chosen.some((message) => {
    const slice = JSON.parse(message.body) as { org_id: string; dt: string; hour: string };
    return key.includes(`/org_id=${slice.org_id}/dt=${slice.dt}/hour=${slice.hour}/`);
  }));
  const decodeCpuMicros = await cpuMicrosAsync(async () => {
    for (const key of sampledRaw) {
      const body = bucket.objects.get(key)!.body;
      const spec = key.startsWith('traces/') ? TRACES : SPANS;
      for await (const group of readRowGroups(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer, spec)) decodedRows += group.length;
    }
  });
  const spansColumnBytes = { bytes: 0, rows: 0 };
  for (const [key, object] of bucket.objects) {
    const dataset = /^compacted\/(traces|spans)\//.exec(key)?.[1] as 'traces' | 'spans' | undefined;
    if (!dataset) continue;
    compactedBytes[dataset] += object.body.byteLength;
    if (dataset !== 'spans') continue;
    const buffer = object.body.buffer.slice(object.body.byteOffset, object.body.byteOffset + object.body.byteLength) as ArrayBuffer;
    const metadata = await parquetMetadataAsync(buffer);
    spansColumnBytes.rows += Number(metadata.num_rows);
    for (const group of metadata.row_groups) {
      for (const chunk of group.columns) {
        if (queryColumns.includes(chunk.meta_data?.path_in_schema[0] ?? '')) spansColumnBytes.bytes += Number(chunk.meta_data?.total_compressed_size ?? 0);
      }
    }
  }
  return {
    slicesPlanned: planned,
    slicesCompacted: chosen.length,
    planner: { ...bucket.requests.planner },
    plannerCpuMicros,
    worker: { ...bucket.requests.worker },
    workerCpuMicros,
    rowsRead,
    rawObjects,
    rawBytes,
    compactedBytes,
    spansColumnBytes,
    decodeCpuMicros,
    decodedRows,
  };
}
