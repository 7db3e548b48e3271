import { type KinesisClient, PutRecordsCommand, type PutRecordsRequestEntry } from '@aws-sdk/client-kinesis';
import { DependencyUnavailableError, PublishIncompleteError } from '../../../shared/domain/errors.js';
import type { StreamRecord, TraceSink } from './ports.js';
import { type BackoffPolicy, type Sleep, sleep as realSleep } from '../../../shared/runtime/backoff.js';
import { retryWithBackoff } from '../../../shared/runtime/retry.js';

/** PutRecords limits: 500 records and 5 MiB (data plus partition keys) per call. */
export const PUT_RECORDS_MAX_COUNT = 500;
export const PUT_RECORDS_MAX_BYTES = 5 * 1024 * 1024;

export const DEFAULT_PUBLISH_BACKOFF: BackoffPolicy = { maxAttempts: 6, baseDelayMs: 50, maxDelayMs: 1_000 };

/**
 * Calls of one chunk whose outcome may be unknown (a timeout, a lost connection, a 5xx) before it gives up.
 * Each such call may have written every entry it carried, and Kinesis has no idempotent put: resending once
 * after a lost answer usually gets a definite one, but under overload every further timed-out resend was one
 * more copy on the stream (up to 6 per trace, 11x the raw rows at concurrency 30). So an entry is written at
 * most twice per request.
 */
export const MAX_UNKNOWN_OUTCOME_CALLS = 2;

/** Splits records into PutRecords calls within the API's count and size limits, keeping their order. */
export function chunkForPutRecords(records: readonly StreamRecord[]): StreamRecord[][] {
  const chunks: StreamRecord[][] = [];
  let current: StreamRecord[] = [];
  let bytes = 0;
  for (const record of records) {
    const size = record.data.byteLength + Buffer.byteLength(record.partitionKey, 'utf8');
    if (current.length > 0 && (current.length === PUT_RECORDS_MAX_COUNT || bytes + size > PUT_RECORDS_MAX_BYTES)) {
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
 * the retries run out, the {@link PublishIncompleteError} counts only the entries the service itself
 * refused on their every attempt.
 */
export class KinesisTraceSink implements TraceSink {
  constructor(
    private readonly client: KinesisClient,
    private readonly streamName: string,
    private readonly policy: BackoffPolicy = DEFAULT_PUBLISH_BACKOFF,
    private readonly sleep: Sleep = realSleep,
  ) {}

  async publish(records: readonly StreamRecord[], options: PublishOptions = {}): Promise<void> {
    // Settled, not Promise.all: a failed chunk must not hide the chunks still in flight.
    const chunks = chunkForPutRecords(records);
    const results = await Promise.allSettled(chunks.map((chunk) => this.publishChunk(chunk, options.signal)));
    const failures = results.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []));
    if (failures.length === 0) return;
    const notWritten = failures.reduce((sum: number, failure) => sum + (failure instanceof PublishIncompleteError ? failure.notWritten : 0), 0);
    const first = failures[0] as Error;
    throw new PublishIncompleteError('kinesis', first.message, notWritten, records.length, { cause: first });
  }

  private async publishChunk(chunk: readonly StreamRecord[], signal: AbortSignal | undefined): Promise<void> {
    let pending: PutRecordsRequestEntry[] = chunk.map((r) => ({ PartitionKey: r.partitionKey, Data: r.data }));
    // Entries some attempt may have written without saying so; they can never count as not written.
    const maybeWritten = new Set<PutRecordsRequestEntry>();
    let unknownOutcomes = 0;
    const giveUp = (failure: unknown, attempts: number) => {
      const error = publishFailed(failure, attempts);
      const notWritten = pending.filter((entry) => !maybeWritten.has(entry)).length;
      return new PublishIncompleteError('kinesis', error.message, notWritten, chunk.length, { cause: error.cause });
    };
    await retryWithBackoff({ policy: this.policy, sleep: this.sleep, giveUp }, async () => {
      // The handler has answered (its deadline): no more work, and no more copies, for a client that has gone.
      if (signal?.aborted) return { failed: new RequestAbortedError('the request was answered before the publish ended'), retryable: false };
      let response;
      try {
        response = await this.client.send(new PutRecordsCommand({ StreamName: this.streamName, Records: pending }), { abortSignal: signal });
      } catch (error) {
        if (refusedByService(error)) return { failed: error, retryable: true };
        for (const entry of pending) maybeWritten.add(entry);
        return { failed: error, retryable: ++unknownOutcomes < MAX_UNKNOWN_OUTCOME_CALLS };
      }
      if (!response.FailedRecordCount) return { done: undefined };
      const results = response.Records ?? [];
      const failed = pending.filter((_, i) => results[i]?.ErrorCode !== undefined || results[i] === undefined);
      const summary = `${failed.length} of ${pending.length} records failed (${results.find((r) => r.ErrorCode)?.ErrorCode ?? 'unknown'})`;
      pending = failed;
      return pending.length === 0 ? { done: undefined } : { failed: summary, retryable: true };
    });
  }
}

/** What a publish may be told: `signal` ends it (and its retries) once the request has been answered. */
export interface PublishOptions {
  signal?: AbortSignal;
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

/** A partial failure is described by its summary; a thrown error by its name, and kept as the cause. */
function publishFailed(failure: unknown, attempts: number): DependencyUnavailableError {
  if (typeof failure === 'string') return new DependencyUnavailableError('kinesis', `PutRecords failed after ${attempts} attempts: ${failure}`);
  const name = (failure as Error).name ?? 'error';
  return new DependencyUnavailableError('kinesis', `PutRecords failed after ${attempts} attempts: ${name}`, { cause: failure });
}
