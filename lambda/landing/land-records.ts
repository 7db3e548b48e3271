import { type TraceRecord, TraceRecordDecodeError, decodeTraceRecord, isReferenceRecord, recordIdentity } from '../shared/domain/trace-record.js';
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

/**
 * What one landing holds in memory at most, whatever the batch: the decoded traces waiting to be
 * written are flushed as soon as they pass either bound, so a batch of 1,000 records of 10,000 spans
 * each never sits in memory whole. One record can overshoot a bound by its own size (at most the
 * 20 MiB ingest body limit). Measured worst case: `npm run bench -- landing-worst-case`.
 */
export const LANDING_MEMORY_BOUNDS = { maxPendingSpanRows: 100_000, maxPendingTextCharacters: 48 * 1024 * 1024 } as const;

export interface LandingSummary {
  recordsIn: number;
  deadLettered: number;
  /** Records skipped because a copy with the same identity came earlier in the batch. */
  duplicatesSkipped: number;
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

/** Characters of the strings a trace holds, the part of its memory that grows with the input. */
function textCharacters({ trace }: LandableTrace): number {
  let characters = trace.attributes.length;
  for (const span of trace.spans) {
    characters += span.input.length + span.output.length + span.attributes.length + (span.error_message?.length ?? 0) + span.name.length;
  }
  return characters;
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
 * (org_id, dt) group, keyed by the group's first sequence number in the batch (a batch larger than
 * {@link LANDING_MEMORY_BOUNDS} is written in several parts, each keyed by its own first sequence
 * number). Copies of a record (same `record_id`) land once. Undecodable records are dead-lettered
 * and the batch goes on. Every write is attempted; if any fails, the whole batch fails with
 * {@link LandingBatchError} so that it is retried (or bisected) from its first record: a partial
 * success would move the checkpoint and change the keys of the retried groups.
 */
export async function landRecords(deps: LandingDeps, records: readonly LandingRecord[]): Promise<LandingSummary> {
  const rowsPerRowGroup = deps.rowsPerRowGroup ?? DEFAULT_ROWS_PER_BATCH;
  const summary: LandingSummary = { recordsIn: records.length, deadLettered: 0, duplicatesSkipped: 0, rows: { traces: 0, spans: 0 }, objectsWritten: 0, bytesWritten: 0 };
  const maxPendingSpanRows = deps.maxPendingSpanRows ?? LANDING_MEMORY_BOUNDS.maxPendingSpanRows;
  const maxPendingText = deps.maxPendingTextCharacters ?? LANDING_MEMORY_BOUNDS.maxPendingTextCharacters;
  const groups = new Map<string, LandingGroup>();
  const seen = new Set<string>();
  let uploads: { key: string; run: () => Promise<void> }[] = [];
  const failures: { key: string; error: unknown }[] = [];
  let attempted = 0;
  let pendingSpanRows = 0;
  let pendingText = 0;

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

  const flush = async () => {
    for (const group of groups.values()) {
      // The spans object is written even when it has no rows: it must replace whatever an earlier,
      // larger attempt of this batch left under the same key.
      for (const spec of [TRACES, SPANS]) {
        // A spans-only record (an OTLP export without its trace's root span) has no trace row of its own.
        const batches = () =>
          spec === TRACES
            ? traceBatches(group.traces.filter((t) => t.context.spans_only !== true), rowsPerRowGroup)
            : spanBatches(group.traces, rowsPerRowGroup);
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
    groups.clear();
    pendingSpanRows = 0;
    pendingText = 0;
    const batch = uploads;
    uploads = [];
    attempted += batch.length;
    const results = await settleAll(batch.map((u) => u.run), deps.maxUploadsInFlight ?? 4);
    results.forEach((result, i) => {
      if (result.status === 'rejected') failures.push({ key: batch[i]!.key, error: result.reason as unknown });
    });
  };

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
    // A PutRecords entry resent after a lost answer, or a resend under the same Idempotency-Key,
    // is a copy of a record this batch already holds.
    const identity = recordIdentity(resolved.trace.context, resolved.trace.trace.trace_id);
    if (seen.has(identity)) {
      summary.duplicatesSkipped++;
      continue;
    }
    seen.add(identity);
    const id = groupKey(record.shardId, resolved.trace);
    const group = groups.get(id);
    if (group) group.traces.push(resolved.trace);
    else groups.set(id, { shardId: record.shardId, orgId: resolved.trace.context.org_id, dt: resolved.trace.dt, hour: resolved.trace.hour, firstSequenceNumber: record.sequenceNumber, traces: [resolved.trace] });
    pendingSpanRows += resolved.trace.trace.spans.length;
    pendingText += textCharacters(resolved.trace);
    if (pendingSpanRows >= maxPendingSpanRows || pendingText >= maxPendingText) await flush();
  }

  await flush();
  if (failures.length > 0) {
    deps.logger?.error('Landing failed; the whole batch will be retried', { failed: failures.map((f) => f.key), of: attempted });
    throw new LandingBatchError(`${failures.length} of ${attempted} objects were not written: ${failures.map((f) => f.key).join(', ')}`, failures);
  }
  return summary;
}
