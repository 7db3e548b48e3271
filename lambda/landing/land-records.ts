import { type TraceRecord, TraceRecordDecodeError, decodeTraceRecord, isReferenceRecord } from '../shared/domain/trace-record.js';
import { DEFAULT_ROWS_PER_BATCH, spanBatches, traceBatches } from './column-batches.js';
import { type LandableTrace, UnlandableRecordError, toLandableTrace } from './landable-trace.js';
import { type LandingGroupKey, deadLetterObjectKey, landingObjectKey } from './landing-keys.js';
import { type DatasetName, SPANS, TRACES } from './landing-schema.js';
import { writeParquet } from './parquet-writer.js';
import { type LandingDeps, ReferencedObjectNotFoundError } from './ports.js';

/** One record of a shard, as the event source mapping or the replay command reads it. */
export interface LandingRecord {
  shardId: string;
  sequenceNumber: string;
  data: Uint8Array;
  approximateArrivalTimestamp: Date;
}

export interface LandingSummary {
  recordsIn: number;
  deadLettered: number;
  rows: Record<DatasetName, number>;
  objectsWritten: number;
  bytesWritten: number;
}

/** At least one object of the batch was not written; the whole batch must be retried. */
export class LandingBatchError extends Error {
  override name = 'LandingBatchError';
  constructor(
    message: string,
    readonly failures: { key: string; error: unknown }[],
  ) {
    super(message, { cause: failures[0]?.error });
  }
}

interface LandingGroup extends LandingGroupKey {
  traces: LandableTrace[];
}

type Resolved = { ok: true; trace: LandableTrace } | { ok: false; reason: string };

async function resolve(deps: LandingDeps, record: LandingRecord): Promise<Resolved> {
  try {
    let decoded: TraceRecord = decodeTraceRecord(record.data);
    if (isReferenceRecord(decoded)) {
      const { ref } = decoded;
      const body = decodeTraceRecord(await deps.store.getObject(ref.bucket, ref.key));
      if (isReferenceRecord(body)) throw new UnlandableRecordError(`referenced object s3://${ref.bucket}/${ref.key} holds another reference`);
      if (body.trace.trace_id !== ref.trace_id) {
        throw new UnlandableRecordError(`referenced object holds trace ${body.trace.trace_id}, the pointer names ${ref.trace_id}`);
      }
      decoded = { v: decoded.v, context: decoded.context, trace: body.trace };
    }
    return { ok: true, trace: toLandableTrace(decoded.context, decoded.trace) };
  } catch (error) {
    if (error instanceof TraceRecordDecodeError || error instanceof UnlandableRecordError || error instanceof ReferencedObjectNotFoundError) {
      return { ok: false, reason: `${error.name}: ${error.message}` };
    }
    throw error;
  }
}

function groupKey(shardId: string, trace: LandableTrace): string {
  return `${shardId}\n${trace.context.org_id}\n${trace.dt}\n${trace.hour}`;
}

/** Runs tasks with at most `limit` in flight and waits for all of them, failed or not. */
async function settleAll(tasks: (() => Promise<void>)[], limit: number): Promise<PromiseSettledResult<void>[]> {
  const results: PromiseSettledResult<void>[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const index = next++;
      try {
        await tasks[index]!();
        results[index] = { status: 'fulfilled', value: undefined };
      } catch (reason) {
        results[index] = { status: 'rejected', reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return results;
}

/**
 * Lands one batch of shard records as Parquet: one `traces` and one `spans` object per
 * (org_id, dt) group, keyed by the group's first sequence number in the batch. Undecodable records
 * are dead-lettered and the batch goes on. Every write is attempted; if any fails, the whole batch
 * fails with {@link LandingBatchError} so that it is retried (or bisected) from its first record:
 * a partial success would move the checkpoint and change the keys of the retried groups.
 */
export async function landRecords(deps: LandingDeps, records: readonly LandingRecord[]): Promise<LandingSummary> {
  const rowsPerRowGroup = deps.rowsPerRowGroup ?? DEFAULT_ROWS_PER_BATCH;
  const summary: LandingSummary = { recordsIn: records.length, deadLettered: 0, rows: { traces: 0, spans: 0 }, objectsWritten: 0, bytesWritten: 0 };
  const groups = new Map<string, LandingGroup>();
  const uploads: { key: string; run: () => Promise<void> }[] = [];

  const upload = (key: string, contentType: string, encode: () => Uint8Array, count: () => void) =>
    uploads.push({
      key,
      run: async () => {
        const body = encode();
        await deps.store.putObject(key, body, contentType);
        summary.objectsWritten++;
        summary.bytesWritten += body.byteLength;
        count();
      },
    });

  for (const record of records) {
    const resolved = await resolve(deps, record);
    if (!resolved.ok) {
      const key = deadLetterObjectKey(record.shardId, record.sequenceNumber, record.approximateArrivalTimestamp);
      deps.logger?.warn('Dead-lettering a record that cannot be landed', { key, reason: resolved.reason, shardId: record.shardId, sequenceNumber: record.sequenceNumber });
      const letter = {
        reason: resolved.reason,
        shard_id: record.shardId,
        sequence_number: record.sequenceNumber,
        approximate_arrival_timestamp: record.approximateArrivalTimestamp.toISOString(),
        data_base64: Buffer.from(record.data).toString('base64'),
      };
      upload(key, 'application/json', () => Buffer.from(JSON.stringify(letter)), () => summary.deadLettered++);
      continue;
    }
    const id = groupKey(record.shardId, resolved.trace);
    const group = groups.get(id);
    if (group) group.traces.push(resolved.trace);
    else groups.set(id, { shardId: record.shardId, orgId: resolved.trace.context.org_id, dt: resolved.trace.dt, hour: resolved.trace.hour, firstSequenceNumber: record.sequenceNumber, traces: [resolved.trace] });
  }

  for (const group of groups.values()) {
    // The spans object is written even when it has no rows: it must replace whatever an earlier,
    // larger attempt of this batch left under the same key.
    for (const spec of [TRACES, SPANS]) {
      const batches = () => (spec === TRACES ? traceBatches(group.traces, rowsPerRowGroup) : spanBatches(group.traces, rowsPerRowGroup));
      let rows = 0;
      upload(
        landingObjectKey(spec.name, group),
        'application/vnd.apache.parquet',
        () => {
          const file = writeParquet(spec, batches());
          rows = file.rows;
          return file.bytes;
        },
        () => (summary.rows[spec.name] += rows),
      );
    }
  }

  const results = await settleAll(uploads.map((u) => u.run), deps.maxUploadsInFlight ?? 4);
  const failures = results.flatMap((result, i) => (result.status === 'rejected' ? [{ key: uploads[i]!.key, error: result.reason as unknown }] : []));
  if (failures.length > 0) {
    deps.logger?.error('Landing failed; the whole batch will be retried', { failed: failures.map((f) => f.key), of: uploads.length });
    throw new LandingBatchError(`${failures.length} of ${uploads.length} objects were not written: ${failures.map((f) => f.key).join(', ')}`, failures);
  }
  return summary;
}
