import { createHash } from 'node:crypto';
import type { TraceContext } from '../../../shared/domain/trace.js';
import type { ValidTrace } from '../validation/validate-candidates.js';
import { compressRecordJson, MAX_INLINE_RECORD_BYTES, TRACE_RECORD_VERSION, type TraceReferenceRecord } from '../../../shared/domain/trace-record.js';
import { overflowObjectKey } from '../../../lake/keys/overflow-keys.js';
import { PublishIncompleteError } from '../../../shared/domain/errors.js';
import type { IngestLogger, IngestMetrics } from '../ports.js';
import type { OverflowStore, StreamRecord, TraceSink } from './ports.js';

/**
 * Puts the accepted traces on the stream, all or an error. A trace too large for one record goes
 * to S3 first and the stream carries a pointer to it. On an error, the objects of the records known not
 * to be on the stream are deleted again: a trace the client is told was not accepted is not kept.
 */
export async function publishTraces(
  ports: { sink: TraceSink } & CleanupPorts,
  traces: readonly EncodedTrace[],
  deadline: { signal?: AbortSignal; deadlineAtMs?: number } = {},
): Promise<void> {
  const stored = await storeRecordData(ports, traces);
  const records = partitionRecords(traces, stored.map(({ data }) => data));
  try {
    await ports.sink.publish(records, { signal: deadline.signal, deadlineAtMs: deadline.deadlineAtMs });
  } catch (error) {
    await forgetOverflow(ports, notOnStream(error, stored), deadline.deadlineAtMs);
    throw error;
  }
}

/** One record's data, and the overflow object it points at, if any. */
interface RecordData {
  data: Uint8Array;
  overflowKey?: string;
}

/** Every record's data; when an overflow object cannot be stored, nothing is published and the others are deleted. */
async function storeRecordData(ports: CleanupPorts, traces: readonly EncodedTrace[]): Promise<RecordData[]> {
  // Settled, not Promise.all: the objects still being written when one fails are deleted too.
  const results = await Promise.allSettled(traces.map((trace) => recordData(ports.overflow, trace)));
  const failed = results.find((result) => result.status === 'rejected');
  if (!failed) return results.map((result) => (result as PromiseFulfilledResult<RecordData>).value);
  await forgetOverflow(ports, results.flatMap((result) => (result.status === 'fulfilled' && result.value.overflowKey ? [result.value.overflowKey] : [])));
  throw failed.reason;
}

/** The records, each with its partition key. */
function partitionRecords(traces: readonly EncodedTrace[], data: readonly Uint8Array[]): StreamRecord[] {
  const chunks = new Map<string, PartitionChunks>();
  return data.map((bytes, i): StreamRecord => {
    const owner = requestIdentityOf(traces[i]!.context);
    const ownChunks = chunks.get(owner) ?? chunks.set(owner, new PartitionChunks(owner)).get(owner)!;
    return { partitionKey: ownChunks.keyFor(bytes.byteLength), data: bytes };
  });
}

/**
 * The overflow keys of the records a failed publish names as not on the stream. Any other error leaves every
 * outcome unknown: a record that may be on the stream keeps its object, or the landing would find it gone.
 */
function notOnStream(error: unknown, stored: readonly RecordData[]): string[] {
  if (!(error instanceof PublishIncompleteError)) return [];
  return error.notWrittenIndexes.flatMap((index) => {
    const key = stored[index]?.overflowKey;
    return key ? [key] : [];
  });
}

/**
 * Deletes overflow objects no record points at, within `OVERFLOW_CLEANUP_BUDGET_MS` and never past `deadlineAtMs`
 * (when the work stops, DEADLINE_MARGIN_MS before the function's timeout): the client's answer, the quota's
 * give-back and the Idempotency-Key's release all wait on it, and an S3 that answers slowly (its client tries 3
 * times, 5 s each) must not take the margin they need. A failed, late or skipped delete is logged and leaves the
 * answer as it is; the bucket's 7-day `ExpireOverflow` rule is the backstop.
 */
async function forgetOverflow(
  { overflow, logger, metrics, cleanupBudgetMs = OVERFLOW_CLEANUP_BUDGET_MS }: CleanupPorts,
  keys: readonly string[],
  deadlineAtMs?: number,
): Promise<void> {
  if (keys.length === 0) return;
  const budgetMs = Math.min(cleanupBudgetMs, deadlineAtMs === undefined ? Infinity : deadlineAtMs - Date.now());
  const failure = budgetMs <= 0 ? new Error('no time left before the deadline') : await deleteWithin(overflow, keys, budgetMs);
  if (failure === undefined) return;
  logger.warn('overflow objects of refused traces not deleted', { keys: keys.length, error: failure.message });
  metrics?.count(OVERFLOW_NOT_DELETED_METRIC, keys.length);
}

/** The delete's error, or one saying it did not answer within `budgetMs`; undefined once deleted. */
async function deleteWithin(overflow: OverflowStore, keys: readonly string[], budgetMs: number): Promise<Error | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<Error>((resolve) => {
    timer = setTimeout(() => resolve(new Error(`no answer within ${Math.ceil(budgetMs)} ms`)), budgetMs);
  });
  const deleted = overflow.delete(keys).then(
    () => undefined,
    (error: unknown) => error as Error,
  );
  const failure = await Promise.race([deleted, late]);
  clearTimeout(timer);
  return failure;
}

/** The ports the clean-up of overflow objects uses; `cleanupBudgetMs` is there for tests. */
type CleanupPorts = { overflow: OverflowStore; logger: IngestLogger; metrics?: IngestMetrics; cleanupBudgetMs?: number };

/** How long a failed request's answer waits for its overflow objects to be deleted. */
export const OVERFLOW_CLEANUP_BUDGET_MS = 1_000;

/** Overflow objects of refused traces left after a failed delete, for the 7-day rule to remove. */
export const OVERFLOW_NOT_DELETED_METRIC = 'OverflowObjectsNotDeleted';

/**
 * How many of a request's records share one partition key (and so one shard): at most 100 records and 256 KiB,
 * a tenth of a shard's records and a quarter of its bytes in one second
 * (https://docs.aws.amazon.com/streams/latest/dev/service-sizes-and-limits.html: 1,000 records or 1 MiB per second).
 */
export const PARTITION_CHUNK = { maxRecords: 100, maxBytes: 256 * 1024 } as const;

/** Kinesis partition keys are 1 to 256 Unicode characters. */
const MAX_PARTITION_KEY_LENGTH = 256;

/**
 * The partition keys of one request's records, in order: consecutive records share a key, `<request identity>#<n>`,
 * until a chunk is full ({@link PARTITION_CHUNK}).
 *
 * Why not the trace id (spread evenly, as before): the landing writes one object per dataset for every
 * organization in a shard's batch, so a request spread over every shard cost two PUTs per shard; with its traces
 * together on one shard it costs two, whatever the number of shards (the cost model, docs/deploy.md). The chunks
 * bound what one key puts on one shard, and the sink resends entries a busy shard throttles. The request identity
 * is the one in `record_id`, so a resend under the same Idempotency-Key (same body, same chunks) goes to the same
 * shards, as the trace id did.
 */
export class PartitionChunks {
  private chunk = 0;
  private records = 0;
  private bytes = 0;
  private readonly owner: string;

  constructor(requestIdentity: string) {
    // Leaves room for `#<n>` under the limit; the identities ingest makes are far shorter.
    this.owner = requestIdentity.length <= MAX_PARTITION_KEY_LENGTH - 8 ? requestIdentity : createHash('sha256').update(requestIdentity).digest('base64url');
  }

  /** The key of the next record of the request, of `bytes` bytes. */
  keyFor(bytes: number): string {
    if (this.records > 0 && (this.records === PARTITION_CHUNK.maxRecords || this.bytes + bytes > PARTITION_CHUNK.maxBytes)) {
      this.chunk++;
      this.records = 0;
      this.bytes = 0;
    }
    this.records++;
    this.bytes += bytes;
    return `${this.owner}#${this.chunk}`;
  }
}

/** The request identity a record id starts with (`<request identity>/<index>`), else the request id. */
function requestIdentityOf(context: TraceContext): string {
  const recordId = context.record_id;
  const slash = recordId?.lastIndexOf('/') ?? -1;
  return recordId && slash > 0 ? recordId.slice(0, slash) : context.request_id;
}

/** The record's data: the encoded trace, or a pointer to it in S3 when it is too large for one record. */
async function recordData(overflow: OverflowStore, { context, index, traceId, data }: EncodedTrace): Promise<RecordData> {
  // Measured with the trace id, the length of the partition key it used to have: the bound keeps its margin.
  if (data.byteLength + traceId.length <= MAX_INLINE_RECORD_BYTES) return { data };
  const stored = await overflow.put(overflowObjectKey(context, index, traceId), data);
  const pointer: TraceReferenceRecord = {
    v: TRACE_RECORD_VERSION,
    context,
    ref: { ...stored, bytes: data.byteLength, trace_id: traceId },
  };
  return { data: compressRecordJson(JSON.stringify(pointer)), overflowKey: stored.key };
}

/** An accepted trace, already serialised and compressed as its stream record. */
export interface EncodedTrace {
  context: TraceContext;
  /** Index of the trace in the request's `traces`. */
  index: number;
  traceId: string;
  data: Buffer;
}

/** The context every trace of one request shares; each trace adds its own workspace. */
export type RequestContext = Omit<TraceContext, 'workspace_slug' | 'record_id'>;

/** A valid trace as its stream record, serialised and compressed; `spans_only` marks a trace whose row another request carries. */
export function encodeTrace(requestContext: RequestContext, requestIdentity: string, { index, trace, spansOnly }: ValidTrace): EncodedTrace {
  const context: TraceContext = { ...requestContext, workspace_slug: trace.workspace_slug, record_id: `${requestIdentity}/${index}` };
  if (spansOnly) context.spans_only = true;
  return { context, index, traceId: trace.trace_id, data: compressRecordJson(JSON.stringify({ v: TRACE_RECORD_VERSION, context, trace })) };
}
