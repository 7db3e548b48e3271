import { type KinesisClient, PutRecordsCommand, type PutRecordsRequestEntry } from '@aws-sdk/client-kinesis';
import { DependencyUnavailableError } from '../domain/errors.js';
import { backoffDelay, type BackoffPolicy, type Sleep, sleep as realSleep } from '../runtime/backoff.js';

export interface StreamRecord {
  partitionKey: string;
  data: Uint8Array;
}

/** Port: puts records on the trace stream, all of them or an error. */
export interface TraceSink {
  publish(records: readonly StreamRecord[]): Promise<void>;
}

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
    let lastFailure = '';
    for (let attempt = 1; attempt <= this.policy.maxAttempts; attempt++) {
      if (attempt > 1) await this.sleep(backoffDelay(this.policy, attempt - 1));
      try {
        const response = await this.client.send(new PutRecordsCommand({ StreamName: this.streamName, Records: pending }));
        if (!response.FailedRecordCount) return;
        const results = response.Records ?? [];
        const failed = pending.filter((_, i) => results[i]?.ErrorCode !== undefined || results[i] === undefined);
        lastFailure = `${failed.length} of ${pending.length} records failed (${results.find((r) => r.ErrorCode)?.ErrorCode ?? 'unknown'})`;
        pending = failed;
        if (pending.length === 0) return;
      } catch (error) {
        lastFailure = (error as Error).name ?? 'error';
        if (attempt === this.policy.maxAttempts) {
          throw new DependencyUnavailableError('kinesis', `PutRecords failed after ${attempt} attempts: ${lastFailure}`, { cause: error });
        }
      }
    }
    throw new DependencyUnavailableError('kinesis', `PutRecords failed after ${this.policy.maxAttempts} attempts: ${lastFailure}`);
  }
}
