import { type KinesisClient, PutRecordsCommand, type PutRecordsRequestEntry } from '@aws-sdk/client-kinesis';
import { PublishIncompleteError } from '../../../shared/domain/errors.js';
import type { StreamRecord, TraceSink } from '../../core/publish/ports.js';
import { type BackoffPolicy, type Sleep, sleep as realSleep } from '../../../shared/runtime/backoff.js';
import { retryWithBackoff } from '../../../shared/runtime/retry.js';

/** PutRecords limits: 500 records and 5 MiB (data plus partition keys) per call. */
export const PUT_RECORDS_MAX_COUNT = 500;
export const PUT_RECORDS_MAX_BYTES = 5 * 1024 * 1024;

/**
 * What one of our PutRecords calls carries at most, well inside the API's limits: a request's records go out as
 * several calls side by side, so the time of a publish is that of its slowest small call rather than of one call
 * carrying everything, and a call whose outcome is lost leaves at most this much to resend (a copy on the stream).
 * 100 records is one partition-key chunk of a request (`PARTITION_CHUNK` in publish-traces.ts).
 */
export const PUBLISH_CALL_MAX = { records: 100, bytes: 1024 * 1024 } as const;

export const DEFAULT_PUBLISH_BACKOFF: BackoffPolicy = { maxAttempts: 6, baseDelayMs: 50, maxDelayMs: 1_000 };

/**
 * Calls of one chunk whose outcome may be unknown (a timeout, a lost connection, a 5xx) before it gives up.
 * Each such call may have written every entry it carried, and Kinesis has no idempotent put
 * (https://docs.aws.amazon.com/streams/latest/dev/kinesis-record-processor-duplicates.html: a producer that
 * retries after a network timeout may leave two records): under overload every further timed-out resend was one
 * more copy on the stream (up to 6 per trace, 11x the raw rows at concurrency 30). So an entry is written at
 * most twice per request.
 */
export const MAX_UNKNOWN_OUTCOME_CALLS = 2;

/**
 * The time one PutRecords call is given before it counts as lost, sized to what it carries: a floor that holds
 * Kinesis's ordinary latency many times over (the Kinesis Producer Library's own request timeout is 6 s,
 * https://docs.aws.amazon.com/streams/latest/dev/kinesis-kpl-config.html), plus time per record and per byte,
 * so that a 100-record call is not held to what a 10-record call needs.
 */
export const PUBLISH_CALL_TIMEOUT = { baseMs: 6_000, perRecordMs: 10, perMiBMs: 4_000 } as const;

/** A call left with less time than this before the deadline is not started: it could not end in time. */
export const MIN_PUBLISH_CALL_MS = 500;

/** The time {@link PUBLISH_CALL_TIMEOUT} gives a call of `records` entries and `bytes` bytes. */
export function sizedCallTimeoutMs(records: number, bytes: number): number {
  return Math.ceil(PUBLISH_CALL_TIMEOUT.baseMs + PUBLISH_CALL_TIMEOUT.perRecordMs * records + (PUBLISH_CALL_TIMEOUT.perMiBMs * bytes) / (1024 * 1024));
}

/**
 * How long the next call may run, given the time left before the deadline (`leftMs`, Infinity without one):
 * never past the deadline, and never cut while it can still end in time. A call is cut before the deadline only
 * when waiting longer would leave too little time for a resend of its own size, the one case where cutting it
 * (a lost connection, a stalled stream) can still get the batch stored; the last call allowed gets all the time
 * left.
 */
export function callTimeoutMs(sizedMs: number, leftMs: number, lastAllowed: boolean): number {
  // Without a deadline (a caller outside the handler), the sized time alone.
  if (!Number.isFinite(leftMs)) return sizedMs;
  if (lastAllowed) return leftMs;
  return Math.min(leftMs, Math.max(sizedMs, leftMs - sizedMs));
}

/** Bytes a record counts for in a PutRecords call: its data plus its partition key. */
const entryBytes = (record: StreamRecord) => record.data.byteLength + Buffer.byteLength(record.partitionKey, 'utf8');

/** Splits records into PutRecords calls of at most `limits` (the API's own by default), keeping their order. */
export function chunkForPutRecords(records: readonly StreamRecord[], limits: { records: number; bytes: number } = { records: PUT_RECORDS_MAX_COUNT, bytes: PUT_RECORDS_MAX_BYTES }): StreamRecord[][] {
  const chunks: StreamRecord[][] = [];
  let current: StreamRecord[] = [];
  let bytes = 0;
  for (const record of records) {
    const size = entryBytes(record);
    if (current.length > 0 && (current.length === limits.records || bytes + size > limits.bytes)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(record);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * Publishes with `PutRecords`, resending only the entries that failed, with bounded backoff.
 *
 * A call that timed out or lost its connection may have been written: its entries are resent (the
 * copies carry the same `record_id`, so they land once) but are never reported as not written. When
 * the retries run out, the {@link PublishIncompleteError} names (by position in `records`) only the entries
 * the service itself refused on their every attempt. A call the SDK tried more than once behind the sink's back
 * (a client configured to retry) counts as of unknown outcome, whatever its last attempt said.
 */
export class KinesisTraceSink implements TraceSink {
  constructor(
    private readonly client: KinesisClient,
    private readonly streamName: string,
    private readonly policy: BackoffPolicy = DEFAULT_PUBLISH_BACKOFF,
    private readonly sleep: Sleep = realSleep,
    /** Epoch milliseconds, the clock `deadlineAtMs` is read on; injectable so tests can pin it. */
    private readonly now: () => number = Date.now,
  ) {}

  async publish(records: readonly StreamRecord[], options: PublishOptions = {}): Promise<void> {
    // Settled, not Promise.all: a failed chunk must not hide the chunks still in flight.
    const chunks = chunkForPutRecords(records, PUBLISH_CALL_MAX);
    // Chunks keep the records' order, so a chunk's first record is at the sum of the lengths before it.
    const offsets = chunks.map((_, i) => chunks.slice(0, i).reduce((sum, chunk) => sum + chunk.length, 0));
    const results = await Promise.allSettled(chunks.map((chunk, i) => this.publishChunk(chunk, offsets[i]!, options)));
    const failures = results.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []));
    if (failures.length === 0) return;
    const notWritten = failures.flatMap((failure) => (failure instanceof PublishIncompleteError ? failure.notWrittenIndexes : []));
    const first = failures[0] as Error;
    throw new PublishIncompleteError('kinesis', first.message, notWritten, records.length, { cause: first });
  }

  private async publishChunk(chunk: readonly StreamRecord[], offset: number, { signal, deadlineAtMs }: PublishOptions): Promise<void> {
    let pending: PutRecordsRequestEntry[] = chunk.map((r) => ({ PartitionKey: r.partitionKey, Data: r.data }));
    const indexOf = new Map(pending.map((entry, i) => [entry, offset + i]));
    const recordOf = new Map(pending.map((entry, i) => [entry, chunk[i]!]));
    const bytesOf = (entries: readonly PutRecordsRequestEntry[]) => entries.reduce((sum, entry) => sum + entryBytes(recordOf.get(entry)!), 0);
    // Entries some attempt may have written without saying so; they can never count as not written.
    const maybeWritten = new Set<PutRecordsRequestEntry>();
    let unknownOutcomes = 0;
    const giveUp = (failure: unknown, attempts: number) => {
      const { message, cause } = describeFailure(failure, attempts);
      const notWritten = pending.filter((entry) => !maybeWritten.has(entry)).map((entry) => indexOf.get(entry)!);
      return new PublishIncompleteError('kinesis', message, notWritten, chunk.length, { cause });
    };
    await retryWithBackoff({ policy: this.policy, sleep: this.sleep, giveUp }, async () => {
      // The handler is winding down (its deadline): no more work, and no more copies, for a client about to be answered.
      if (signal?.aborted) return { failed: new RequestAbortedError('the request reached its deadline before the publish ended'), retryable: false };
      const leftMs = deadlineAtMs === undefined ? Infinity : deadlineAtMs - this.now();
      if (leftMs < MIN_PUBLISH_CALL_MS) return { failed: new RequestAbortedError(`${Math.max(0, Math.round(leftMs))} ms left before the deadline: too little for another call`), retryable: false };
      const requestTimeout = callTimeoutMs(sizedCallTimeoutMs(pending.length, bytesOf(pending)), leftMs, unknownOutcomes === MAX_UNKNOWN_OUTCOME_CALLS - 1);
      let response;
      try {
        // The timeout of this call alone (the client's own is the fallback): @smithy/node-http-handler 4.x reads
        // `requestTimeout` and `abortSignal` from the options of each `send` (abortSignal: "AbortController in
        // modular AWS SDK for JavaScript", https://aws.amazon.com/blogs/developer/abortcontroller-in-modular-aws-sdk-for-javascript/;
        // over HTTP/2, Kinesis's default, the timeout is the stream's inactivity timeout).
        response = await abortable(this.client.send(new PutRecordsCommand({ StreamName: this.streamName, Records: pending }), { abortSignal: signal, requestTimeout }), signal);
      } catch (error) {
        // A refusal ends only the SDK's last attempt: after a hidden retry, an earlier attempt may have written.
        if (refusedByService(error) && !retriedBySdk(error)) return { failed: error, retryable: true };
        for (const entry of pending) maybeWritten.add(entry);
        return { failed: error, retryable: ++unknownOutcomes < MAX_UNKNOWN_OUTCOME_CALLS };
      }
      if (!response.FailedRecordCount) return { done: undefined };
      // Results are in the order of the request's entries; a failed entry carries an ErrorCode
      // (ProvisionedThroughputExceededException or InternalFailure) and was not added to the stream
      // (https://docs.aws.amazon.com/kinesis/latest/APIReference/API_PutRecords.html,
      // https://docs.aws.amazon.com/kinesis/latest/APIReference/API_PutRecordsResultEntry.html). An entry without a
      // result is taken as failed: resent, and never reported as written.
      const results = response.Records ?? [];
      const failed = pending.filter((_, i) => results[i]?.ErrorCode !== undefined || results[i] === undefined);
      // The answer is the SDK's last attempt's: an entry it refused may have been written by an attempt before it.
      if (retriedBySdk(response)) for (const entry of failed) maybeWritten.add(entry);
      const summary = `${failed.length} of ${pending.length} records failed (${results.find((r) => r.ErrorCode)?.ErrorCode ?? 'unknown'})`;
      pending = failed;
      return pending.length === 0 ? { done: undefined } : { failed: summary, retryable: true };
    });
  }
}

/**
 * The call, or an AbortError as soon as `signal` aborts, whether or not the client honours its `abortSignal`: the
 * request winds down at its deadline even over a client that does not stop (the call's outcome is then unknown).
 */
function abortable<T>(call: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return call;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(Object.assign(new Error('the call was abandoned at the request deadline'), { name: 'AbortError' }));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    // Promise.resolve: a mocked client may answer with a plain value.
    Promise.resolve(call)
      .then(resolve, reject)
      .finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * What a publish may be told: `signal` ends it (and its retries) at the request's deadline, `deadlineAtMs`
 * (epoch milliseconds) is when that is, so that no call is given time beyond it.
 */
export interface PublishOptions {
  signal?: AbortSignal;
  deadlineAtMs?: number;
}

class RequestAbortedError extends Error {
  override name = 'RequestAbortedError';
}

/** Errors raised before a connection existed: the request never left this process. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * The service answered with a client fault (throttling, a missing stream, access denied), or no
 * connection could be made: the call wrote nothing. A timeout, a connection lost mid-request or a
 * server fault (5xx) leaves the outcome unknown.
 */
function refusedByService(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { $fault, code, cause } = error as { $fault?: unknown; code?: unknown; cause?: { code?: unknown } };
  // Over HTTP/2 a refused connection arrives as ERR_HTTP2_STREAM_CANCEL with the socket error as its cause.
  const codes = [code, cause?.code];
  return $fault === 'client' || codes.some((c) => typeof c === 'string' && NOT_SENT_CODES.has(c));
}

/**
 * Whether the SDK itself sent this call more than once (`$metadata.attempts`, "the number of times this operation
 * was attempted": ResponseMetadata in @smithy/types, set on answers and errors alike by the SDK's retry middleware).
 * The deployed client makes one attempt (`maxAttempts: 1`, lambda/ingest/compose.ts), so that every attempt is
 * this sink's and an entry refused on each of them is known not to be on the stream; a client that retries
 * (the SDK's default is 3 attempts, or a `retryStrategy`, which takes precedence over `maxAttempts`:
 * https://www.npmjs.com/package/@smithy/util-retry) could hide a timed-out attempt behind a refusal. Such a call is
 * never taken as a refusal.
 */
function retriedBySdk(answer: unknown): boolean {
  const attempts = (answer as { $metadata?: { attempts?: unknown } } | undefined)?.$metadata?.attempts;
  return typeof attempts === 'number' && attempts > 1;
}

/** A partial failure is described by its summary; a thrown error by its name, and kept as the cause. */
function describeFailure(failure: unknown, attempts: number): { message: string; cause?: unknown } {
  const prefix = `PutRecords failed after ${attempts} attempts`;
  if (typeof failure === 'string') return { message: `${prefix}: ${failure}` };
  // A client may reject with anything: null and plain objects have no name.
  const name = (failure as { name?: unknown } | null)?.name;
  return { message: `${prefix}: ${typeof name === 'string' ? name : 'error'}`, cause: failure };
}
