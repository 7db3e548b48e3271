import type { LandingRecord, LandingSummary } from './landing-types.js';
import type { LandingDeps, LandingLogger } from './ports.js';
import { ObjectUploads, type UploadFailure } from './steps/object-uploads.js';
import { PendingGroups } from './steps/pending-groups.js';
import { resolveRecord } from './steps/resolve-record.js';

/**
 * What one landing holds in memory at most, whatever the batch: the decoded traces waiting to be
 * written are flushed as soon as they pass either bound, so a batch of 1,000 records of 10,000 spans
 * each never sits in memory whole. One record can overshoot a bound by its own size (at most the
 * 4 MiB ingest ceiling, MAX_DECODED_BODY_BYTES). Measured worst case, with 20 MiB traces, the former limit:
 * `npm run bench -- landing-worst-case`.
 */
export const LANDING_MEMORY_BOUNDS = { maxPendingSpanRows: 100_000, maxPendingTextCharacters: 48 * 1024 * 1024 } as const;

/** At least one object of the batch was not written; the whole batch must be retried. */
export class LandingBatchError extends Error {
  override name = 'LandingBatchError';
  constructor(
    message: string,
    readonly failures: UploadFailure[],
  ) {
    super(message, { cause: failures[0]?.error });
  }
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
  const summary: LandingSummary = { recordsIn: records.length, deadLettered: 0, duplicatesSkipped: 0, rows: { traces: 0, spans: 0 }, objectsWritten: 0, bytesWritten: 0 };
  const pending = new PendingGroups({
    maxSpanRows: deps.maxPendingSpanRows ?? LANDING_MEMORY_BOUNDS.maxPendingSpanRows,
    maxTextCharacters: deps.maxPendingTextCharacters ?? LANDING_MEMORY_BOUNDS.maxPendingTextCharacters,
  });
  const uploads = new ObjectUploads(deps, summary);
  for (const record of records) {
    const resolved = await resolveRecord(deps.store, record);
    if (!resolved.ok) uploads.deadLetter(record, resolved.reason);
    else if (!pending.add(record, resolved.trace)) summary.duplicatesSkipped++;
    else if (pending.full) await uploads.flush(pending.drain());
  }
  await uploads.flush(pending.drain());
  failIfAnyObjectMissing(uploads, deps.logger);
  return summary;
}

function failIfAnyObjectMissing({ failures, attempted }: ObjectUploads, logger: LandingLogger | undefined): void {
  if (failures.length === 0) return;
  logger?.error('Landing failed; the whole batch will be retried', { failed: failures.map((f) => f.key), of: attempted });
  throw new LandingBatchError(`${failures.length} of ${attempted} objects were not written: ${failures.map((f) => f.key).join(', ')}`, failures);
}
