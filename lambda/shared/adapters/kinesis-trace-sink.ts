import { type KinesisClient, PutRecordsCommand, type PutRecordsRequestEntry } from '@aws-sdk/client-kinesis';
import { DependencyUnavailableError } from '../domain/errors.js';
import type { StreamRecord, TraceSink } from '../../ingest/ports.js';
import { type BackoffPolicy, type Sleep, sleep as realSleep } from '../runtime/backoff.js';
import { retryWithBackoff } from '../runtime/retry.js';

/** PutRecords limits: 500 records and 5 MiB (data plus partition keys) per call. */
export const PUT_RECORDS_MAX_COUNT = 500;
export const PUT_RECORDS_MAX_BYTES = 5 * 1024 * 1024;

export const DEFAULT_PUBLISH_BACKOFF: BackoffPolicy = { maxAttempts: 6, baseDelayMs: 50, maxDelayMs: 1_000 };

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

/** Publishes with `PutRecords`, resending only the entries that failed, with bounded backoff. */
export class KinesisTraceSink implements TraceSink {
  constructor(
    private readonly client: KinesisClient,
    private readonly streamName: string,
    private readonly policy: BackoffPolicy = DEFAULT_PUBLISH_BACKOFF,
    private readonly sleep: Sleep = realSleep,
  ) {}

  async publish(records: readonly StreamRecord[]): Promise<void> {
    await Promise.all(chunkForPutRecords(records).map((chunk) => this.publishChunk(chunk)));
  }

  private async publishChunk(chunk: readonly StreamRecord[]): Promise<void> {
    let pending: PutRecordsRequestEntry[] = chunk.map((r) => ({ PartitionKey: r.partitionKey, Data: r.data }));
    await retryWithBackoff({ policy: this.policy, sleep: this.sleep, giveUp: publishFailed }, async () => {
      const response = await this.client.send(new PutRecordsCommand({ StreamName: this.streamName, Records: pending }));
      if (!response.FailedRecordCount) return { done: undefined };
      const results = response.Records ?? [];
      const failed = pending.filter((_, i) => results[i]?.ErrorCode !== undefined || results[i] === undefined);
      const summary = `${failed.length} of ${pending.length} records failed (${results.find((r) => r.ErrorCode)?.ErrorCode ?? 'unknown'})`;
      pending = failed;
      return pending.length === 0 ? { done: undefined } : { failed: summary, retryable: true };
    });
  }
}

/** A partial failure is described by its summary; a thrown error by its name, and kept as the cause. */
function publishFailed(failure: unknown, attempts: number): DependencyUnavailableError {
  if (typeof failure === 'string') return new DependencyUnavailableError('kinesis', `PutRecords failed after ${attempts} attempts: ${failure}`);
  const name = (failure as Error).name ?? 'error';
  return new DependencyUnavailableError('kinesis', `PutRecords failed after ${attempts} attempts: ${name}`, { cause: failure });
}
