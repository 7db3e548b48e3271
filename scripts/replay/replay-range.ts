import { GetRecordsCommand, GetShardIteratorCommand, type KinesisClient } from '@aws-sdk/client-kinesis';
import { landRecords } from '../../lambda/landing/land-records.js';
import type { LandingRecord, LandingSummary } from '../../lambda/landing/landing-types.js';
import type { LandingDeps, LandingStore } from '../../lambda/landing/ports.js';

/** A shard and an inclusive sequence range, as the on-failure destination reports it. */
export interface ShardRange {
  streamName: string;
  shardId: string;
  startSequenceNumber: string;
  endSequenceNumber: string;
}

/** Reads the range from `KinesisBatchInfo` of an on-failure destination message (SQS or SNS body). */
export function rangeFromFailureMessage(message: unknown): ShardRange {
  const info = (message as { KinesisBatchInfo?: Record<string, unknown> } | null)?.KinesisBatchInfo;
  const { shardId, startSequenceNumber, endSequenceNumber, streamArn } = info ?? {};
  if (typeof shardId !== 'string' || typeof startSequenceNumber !== 'string' || typeof endSequenceNumber !== 'string' || typeof streamArn !== 'string') {
    throw new Error('not an on-failure record: KinesisBatchInfo with shardId, startSequenceNumber, endSequenceNumber and streamArn expected');
  }
  return { streamName: streamArn.slice(streamArn.lastIndexOf('/') + 1), shardId, startSequenceNumber, endSequenceNumber };
}

const after = (a: string, b: string) => BigInt(a) > BigInt(b);

/** Reads every record of the range from the stream, in order (the stream must still retain it). */
export async function readRange(kinesis: KinesisClient, range: ShardRange): Promise<LandingRecord[]> {
  const { ShardIterator } = await kinesis.send(
    new GetShardIteratorCommand({ StreamName: range.streamName, ShardId: range.shardId, ShardIteratorType: 'AT_SEQUENCE_NUMBER', StartingSequenceNumber: range.startSequenceNumber }),
  );
  const records: LandingRecord[] = [];
  let iterator = ShardIterator;
  while (iterator) {
    const page = await kinesis.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
    for (const r of page.Records ?? []) {
      if (after(r.SequenceNumber!, range.endSequenceNumber)) return records;
      records.push({ shardId: range.shardId, sequenceNumber: r.SequenceNumber!, data: r.Data!, approximateArrivalTimestamp: r.ApproximateArrivalTimestamp ?? new Date(0) });
    }
    const last = records.at(-1)?.sequenceNumber;
    if (last === range.endSequenceNumber || ((page.Records ?? []).length === 0 && page.MillisBehindLatest === 0)) break;
    iterator = page.NextShardIterator;
  }
  if (records.at(-1)?.sequenceNumber !== range.endSequenceNumber) {
    throw new Error(`range ends at ${range.endSequenceNumber} but the stream holds records only up to ${records.at(-1)?.sequenceNumber ?? '(none)'}`);
  }
  return records;
}

/**
 * The store a replay chunk writes through: its Parquet objects get keys of their own, `<key>.replay-<last
 * sequence number of the chunk>.parquet`. A replayed range need not line up with the batches that landed it
 * first, so a chunk's group can start at the same record as a landed batch's group while ending earlier; under
 * the landed key it would replace that object with fewer rows and lose the rest. Under its own key it only
 * adds copies, which compaction folds into one (the same rows, same `received_at` and `request_id`).
 * Dead letters keep their per-record keys: the same record gives the same letter.
 */
export function replayChunkStore(store: LandingStore, lastSequenceNumber: string): LandingStore {
  return {
    putObject: (key, body, contentType) => store.putObject(key.endsWith('.parquet') ? `${key.slice(0, -'.parquet'.length)}.replay-${lastSequenceNumber}.parquet` : key, body, contentType),
    getObject: (bucket, key) => store.getObject(bucket, key),
  };
}

/**
 * Re-lands a range of a shard, whatever it overlaps (a failed batch's range, or any other), in chunks of
 * `chunkSize` records, each under keys of its own (see {@link replayChunkStore}). Replaying the same range
 * again rewrites the same keys with the same rows. Until the hours it touched are compacted, rows that had
 * landed before are in the raw objects twice; after, once.
 */
export async function replayRange(deps: LandingDeps & { kinesis: KinesisClient; chunkSize?: number }, range: ShardRange): Promise<LandingSummary & { chunks: number }> {
  const records = await readRange(deps.kinesis, range);
  const chunkSize = deps.chunkSize ?? 10_000;
  const total: LandingSummary & { chunks: number } = { recordsIn: 0, deadLettered: 0, duplicatesSkipped: 0, rows: { traces: 0, spans: 0 }, objectsWritten: 0, bytesWritten: 0, chunks: 0 };
  for (let start = 0; start < records.length; start += chunkSize) {
    const chunk = records.slice(start, start + chunkSize);
    const summary = await landRecords({ ...deps, store: replayChunkStore(deps.store, chunk.at(-1)!.sequenceNumber) }, chunk);
    total.recordsIn += summary.recordsIn;
    total.deadLettered += summary.deadLettered;
    total.duplicatesSkipped += summary.duplicatesSkipped;
    total.rows.traces += summary.rows.traces;
    total.rows.spans += summary.rows.spans;
    total.objectsWritten += summary.objectsWritten;
    total.bytesWritten += summary.bytesWritten;
    total.chunks++;
  }
  return total;
}
