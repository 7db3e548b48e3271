import { setTimeout as delay } from 'node:timers/promises';
import {
  GetRecordsCommand,
  GetShardIteratorCommand,
  KinesisClient,
  ListShardsCommand,
  type _Record as KinesisRecord,
} from '@aws-sdk/client-kinesis';
import type { KinesisStreamEvent, KinesisStreamRecord } from 'aws-lambda';
import { kinesisEventRecord } from '../lambda/lambda-events.js';

export type KinesisHandler = (event: KinesisStreamEvent) => Promise<unknown>;

export interface PollerSettings {
  /** Records per invocation at most (the event source mapping's BatchSize). */
  batchSize: number;
  /** How long a batch may wait to fill once it holds a record (MaximumBatchingWindowInSeconds). */
  batchingWindowMs: number;
  /** Retries of a failing batch before it is given up (MaximumRetryAttempts). */
  retryAttempts: number;
  /** Split a failing batch in two and retry each half (BisectBatchOnFunctionError). */
  bisectOnError: boolean;
  /** Pause between GetRecords calls that return nothing. */
  idlePollMs: number;
}

export const LOCAL_POLLER_SETTINGS: PollerSettings = {
  batchSize: 1_000,
  batchingWindowMs: 1_000,
  retryAttempts: 5,
  bisectOnError: true,
  idlePollMs: 200,
};

/** Last sequence number handled per shard, so a restart resumes after it. */
export interface CheckpointStore {
  get(shardId: string): string | undefined;
  set(shardId: string, sequenceNumber: string): void;
}

export interface PollerEvents {
  /** A batch was handed to the function and it returned. */
  onBatch?: (info: { shardId: string; records: number }) => void;
  /** A failed invocation that will be retried. */
  onRetry?: (info: { shardId: string; records: number; attempt: number; error: unknown }) => void;
  /** A batch given up after its retries; the event source mapping would send it to the on-failure destination. */
  onDiscard?: (info: { shardId: string; firstSequenceNumber: string; lastSequenceNumber: string; error: unknown }) => void;
  /** GetRecords or GetShardIterator failed; polling goes on. */
  onPollError?: (info: { shardId: string; error: unknown }) => void;
}

export interface PollerOptions extends PollerEvents {
  kinesis: KinesisClient;
  streamName: string;
  region: string;
  handler: KinesisHandler;
  checkpoints: CheckpointStore;
  settings?: Partial<PollerSettings>;
}

export interface StreamPoller {
  /** Stops polling after the invocation in progress, if any. */
  stop(): Promise<void>;
}

/** Turns a GetRecords record into the record of a Lambda `KinesisStreamEvent`. */
export function toEventRecord(record: KinesisRecord, shardId: string, streamArn: string, region: string): KinesisStreamRecord {
  return kinesisEventRecord({
    shardId,
    sequenceNumber: record.SequenceNumber ?? '',
    partitionKey: record.PartitionKey ?? '',
    data: record.Data ?? new Uint8Array(),
    arrivedAt: record.ApproximateArrivalTimestamp ?? new Date(),
    streamArn,
    region,
  });
}

/** Calls `handler` the way the event source mapping does: retries, bisection, then discard. */
export async function deliverBatch(
  records: KinesisStreamRecord[],
  handler: KinesisHandler,
  settings: Pick<PollerSettings, 'retryAttempts' | 'bisectOnError'>,
  events: PollerEvents & { shardId: string; sleep?: (ms: number) => Promise<void>; isStopping?: () => boolean },
  attemptsLeft: number = settings.retryAttempts,
  attempt = 1,
): Promise<void> {
  const sleep = events.sleep ?? delay;
  try {
    await handler({ Records: records });
    events.onBatch?.({ shardId: events.shardId, records: records.length });
    return;
  } catch (error) {
    if (attemptsLeft <= 0 || events.isStopping?.()) {
      if (events.isStopping?.()) throw error;
      events.onDiscard?.({
        shardId: events.shardId,
        firstSequenceNumber: records[0]?.kinesis.sequenceNumber ?? '',
        lastSequenceNumber: records.at(-1)?.kinesis.sequenceNumber ?? '',
        error,
      });
      return;
    }
    events.onRetry?.({ shardId: events.shardId, records: records.length, attempt, error });
    await sleep(Math.min(200 * 2 ** (attempt - 1), 5_000));
    if (settings.bisectOnError && records.length > 1) {
      const middle = Math.ceil(records.length / 2);
      await deliverBatch(records.slice(0, middle), handler, settings, events, attemptsLeft - 1, attempt + 1);
      await deliverBatch(records.slice(middle), handler, settings, events, attemptsLeft - 1, attempt + 1);
      return;
    }
    await deliverBatch(records, handler, settings, events, attemptsLeft - 1, attempt + 1);
  }
}

/** Polls every shard of a stream and invokes the consumer with batches, one shard at a time each (ParallelizationFactor 1). */
export async function startStreamPoller(options: PollerOptions): Promise<StreamPoller> {
  const settings: PollerSettings = { ...LOCAL_POLLER_SETTINGS, ...options.settings };
  const { kinesis, streamName } = options;
  const streamArn = `arn:aws:kinesis:${options.region}:000000000000:stream/${streamName}`;
  const { Shards = [] } = await kinesis.send(new ListShardsCommand({ StreamName: streamName }));

  let stopping = false;
  const wakers = new Set<() => void>();
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      wakers.add(done);
    });

  async function iteratorFor(shardId: string): Promise<string | undefined> {
    const after = options.checkpoints.get(shardId);
    const { ShardIterator } = await kinesis.send(
      new GetShardIteratorCommand({
        StreamName: streamName,
        ShardId: shardId,
        ...(after ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', StartingSequenceNumber: after } : { ShardIteratorType: 'TRIM_HORIZON' }),
      }),
    );
    return ShardIterator;
  }

  async function pollShard(shardId: string): Promise<void> {
    let iterator: string | undefined;
    let batch: KinesisStreamRecord[] = [];
    let batchStartedAt = 0;
    while (!stopping) {
      try {
        iterator ??= await iteratorFor(shardId);
        if (iterator === undefined) return;
        const page = await kinesis.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: settings.batchSize - batch.length }));
        iterator = page.NextShardIterator;
        const records = page.Records ?? [];
        if (records.length > 0 && batch.length === 0) batchStartedAt = Date.now();
        batch.push(...records.map((record) => toEventRecord(record, shardId, streamArn, options.region)));
        const full = batch.length >= settings.batchSize;
        const windowClosed = batch.length > 0 && Date.now() - batchStartedAt >= settings.batchingWindowMs;
        if (full || windowClosed || (iterator === undefined && batch.length > 0)) {
          const last = batch.at(-1)?.kinesis.sequenceNumber;
          await deliverBatch(batch, options.handler, settings, { ...options, shardId, sleep, isStopping: () => stopping });
          if (last) options.checkpoints.set(shardId, last);
          batch = [];
        } else if (records.length === 0) {
          await sleep(settings.idlePollMs);
        }
      } catch (error) {
        if (stopping) return;
        options.onPollError?.({ shardId, error });
        // Records not yet delivered are read again from the checkpoint.
        iterator = undefined;
        batch = [];
        await sleep(1_000);
      }
    }
  }

  const loops = Shards.map((shard) => pollShard(shard.ShardId ?? ''));
  let stopped: Promise<void> | undefined;
  return {
    stop: () =>
      (stopped ??= (async () => {
        stopping = true;
        for (const wake of [...wakers]) wake();
        await Promise.allSettled(loops);
      })()),
  };
}
