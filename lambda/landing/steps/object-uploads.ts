import type { LandingRecord, LandingSummary } from '../landing-types.js';
import { DEFAULT_ROWS_PER_BATCH, spanBatches, traceBatches } from '../../datasets/column-batches.js';
import { deadLetterObjectKey, landingObjectKey } from '../../lake/keys/raw-keys.js';
import { type LandableTrace, SPANS, TRACES } from '../../datasets/registry.js';
import { writeParquet } from '../../datasets/parquet/parquet-writer.js';
import type { LandingDeps } from '../ports.js';
import type { LandingGroup } from './pending-groups.js';
import { settleLimited } from '../../shared/runtime/limited.js';
import { HASH_BUCKETS, HASH_ORDER_METADATA_KEY, type HashBlock, hashBlocks } from '../../datasets/hash-parts.js';

/** The hash orders of each row group a block's rows are written as: one entry per `rowsPerRowGroup` rows, none when empty. */
function rowGroupOrders(block: HashBlock, rowsOf: (traces: readonly LandableTrace[]) => readonly LandableTrace[], spans: boolean, rowsPerRowGroup: number): [number, number][] {
  const rows = spans ? block.traces.reduce((sum, t) => sum + t.trace.spans.length, 0) : rowsOf(block.traces).length;
  return Array.from({ length: Math.ceil(rows / rowsPerRowGroup) }, () => block.orders);
}

/** An object that was not written, and why. */
export interface UploadFailure {
  key: string;
  error: unknown;
}

interface Upload {
  key: string;
  run: () => Promise<void>;
}

/**
 * The objects of one landing: queued as they are known, written a few at a time when the pending
 * groups are flushed, each counted into the summary once written. A failed write does not stop the
 * others; every failure is kept for the end of the batch.
 */
export class ObjectUploads {
  readonly failures: UploadFailure[] = [];
  /** Objects whose write was attempted. */
  attempted = 0;
  private queued: Upload[] = [];
  private readonly rowsPerRowGroup: number;

  constructor(
    private readonly deps: LandingDeps,
    private readonly summary: LandingSummary,
  ) {
    this.rowsPerRowGroup = deps.rowsPerRowGroup ?? DEFAULT_ROWS_PER_BATCH;
  }

  /** Queues the dead letter of a record that can never land: the record itself and the reason. */
  deadLetter(record: LandingRecord, reason: string): void {
    const key = deadLetterObjectKey(record.shardId, record.sequenceNumber, record.approximateArrivalTimestamp);
    this.deps.logger?.warn('Dead-lettering a record that cannot be landed', { key, reason, shardId: record.shardId, sequenceNumber: record.sequenceNumber });
    const letter = {
      reason,
      shard_id: record.shardId,
      sequence_number: record.sequenceNumber,
      approximate_arrival_timestamp: record.approximateArrivalTimestamp.toISOString(),
      data_base64: Buffer.from(record.data).toString('base64'),
    };
    this.queue(key, 'application/json', () => Buffer.from(JSON.stringify(letter)), () => this.summary.deadLettered++);
  }

  /** Queues the `traces` and `spans` objects of each group, then writes everything queued. */
  async flush(groups: readonly LandingGroup[]): Promise<void> {
    for (const group of groups) this.queueParquet(group);
    const batch = this.queued;
    this.queued = [];
    this.attempted += batch.length;
    // Every upload is waited for, failed or not: the failures are reported together.
    const results = await settleLimited(batch, this.deps.maxUploadsInFlight ?? 4, (upload) => upload.run());
    results.forEach((result, i) => {
      if (result?.status === 'rejected') this.failures.push({ key: batch[i]!.key, error: result.reason as unknown });
    });
  }

  private queueParquet(group: LandingGroup): void {
    // A large group goes in hash order, a row group per block of hash buckets, so that a compaction part reads
    // only its own row groups (see hash-parts.ts); a small one in arrival order, as one run.
    const blocks: HashBlock[] = hashBlocks(group.traces) ?? [{ traces: group.traces, orders: [0, HASH_BUCKETS - 1] }];
    const ordered = blocks.length > 1;
    // The spans object is written even when it has no rows: it must replace whatever an earlier,
    // larger attempt of this batch left under the same key.
    for (const spec of [TRACES, SPANS]) {
      // A spans-only record (an OTLP export without its trace's root span) has no trace row of its own.
      const rowsOf = (traces: readonly LandableTrace[]) =>
        spec === TRACES ? traces.filter((t) => t.context.spans_only !== true) : traces;
      const batchesOf = (traces: readonly LandableTrace[]) =>
        spec === TRACES ? traceBatches(rowsOf(traces), this.rowsPerRowGroup) : spanBatches(traces, this.rowsPerRowGroup);
      const batches = function* () {
        for (const block of blocks) yield* batchesOf(block.traces);
      };
      const metadata = ordered ? { [HASH_ORDER_METADATA_KEY]: JSON.stringify(blocks.flatMap((block) => rowGroupOrders(block, rowsOf, spec === SPANS, this.rowsPerRowGroup))) } : undefined;
      let rows = 0;
      this.queue(
        landingObjectKey(spec.name, group),
        'application/vnd.apache.parquet',
        () => {
          const file = writeParquet(spec, batches(), undefined, metadata);
          rows = file.rows;
          return file.bytes;
        },
        () => (this.summary.rows[spec.name] += rows),
      );
    }
  }

  private queue(key: string, contentType: string, encode: () => Uint8Array, count: () => void): void {
    this.queued.push({
      key,
      run: async () => {
        const body = encode();
        await this.deps.store.putObject(key, body, contentType);
        this.summary.objectsWritten++;
        this.summary.bytesWritten += body.byteLength;
        count();
      },
    });
  }
}
