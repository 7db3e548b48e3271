import { openSync, closeSync, readFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import type { PendingOptions } from '../../lambda/compaction/compact-pending.js';
import { type ErasingRun, compactAndErase } from '../../lambda/compaction/compact-and-erase.js';
import { FileErasureSecret } from '../../lambda/erasure/file-erasure-secret.js';
import { StoredErasures } from '../../lambda/erasure/stored-erasures.js';
import type { CompactionDeps } from '../../lambda/lake/ports.js';
import { S3LakeStore } from '../../lambda/lake/s3-lake-store.js';
import { DynamoDbTenancyStore } from '../../lambda/tenancy-store/dynamodb-tenancy-store.js';
import { S3RetentionBucket } from '../../lambda/retention/s3-retention-bucket.js';
import { type RetentionSweep, sweepRetention } from '../../lambda/retention/sweep-retention.js';
import { type LocalEndpoints, type LocalPaths, isProcessAlive, removeFile } from './local-state.js';
import { localClientConfig } from '../engines/provision.js';

/** The local stack's per-stack erasure secret (see docs/operations.md, "Erasure"). */
export const localErasureSecret = (paths: LocalPaths) => new FileErasureSecret(path.join(paths.root, 'erasure-secret'));

/** Another compaction of the same local stack is running (the timer of `npm start`, or `npm run compact`). */
export class CompactionBusyError extends Error {
  override name = 'CompactionBusyError';
}

const lockFile = (paths: LocalPaths) => path.join(paths.root, 'compaction.lock');

/**
 * Runs `work` holding the local compaction lock: two compactions of one slice at once could delete each
 * other's new objects. (Deployed, the compaction queue's message groups do this, one group per slice.) A lock
 * left by a dead process is taken over.
 */
export async function withCompactionLock<T>(paths: LocalPaths, work: () => Promise<T>): Promise<T> {
  const file = lockFile(paths);
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw error;
      let holder = NaN;
      try {
        holder = Number(readFileSync(file, 'utf8'));
      } catch {
        // Released in between: try again.
      }
      if (Number.isInteger(holder) && holder !== process.pid && isProcessAlive(holder)) {
        throw new CompactionBusyError(`another compaction is running (process ${holder}); try again in a moment`);
      }
      removeFile(file);
    }
  }
  try {
    return await work();
  } finally {
    removeFile(file);
  }
}

export interface LocalCompactionOptions extends PendingOptions {
  deps?: Partial<Omit<CompactionDeps, 'store' | 'erasures'>>;
}

/** What a local run did: the retention sweep (when the tenancy table was given), then compaction. */
export type LocalCompactionRun = ErasingRun & { retention?: RetentionSweep; retentionFailure?: string };

/**
 * Runs the local stack's scheduled work on its bucket through its S3 endpoint in this process, under the compaction
 * lock: the retention sweep first (when the tenancy table is given: organizations and plans say what is past
 * retention), so nothing is compacted that is deleted next, then compaction with the two steps the deployed planner
 * and workers share: find the pending slices, compact each one.
 */
export async function compactLocal(
  endpoints: Pick<LocalEndpoints, 's3' | 'bucket'> & Partial<Pick<LocalEndpoints, 'dynamodb' | 'tables'>>,
  paths: LocalPaths,
  options: LocalCompactionOptions = {},
): Promise<LocalCompactionRun> {
  const s3 = new S3Client(localClientConfig(endpoints.s3));
  const dynamodb = endpoints.dynamodb && endpoints.tables ? new DynamoDBClient(localClientConfig(endpoints.dynamodb)) : undefined;
  try {
    const { deps, ...pending } = options;
    const store = new S3LakeStore(s3, endpoints.bucket);
    const secret = localErasureSecret(paths);
    return await withCompactionLock(paths, async () => {
      // A failed sweep does not hold compaction up: it is reported, and the next run sweeps again.
      let swept: Pick<LocalCompactionRun, 'retention' | 'retentionFailure'> = {};
      if (dynamodb && endpoints.tables) {
        const tenancy = new DynamoDbTenancyStore(dynamodb, endpoints.tables.tenancy);
        swept = await sweepRetention({ store, bucket: new S3RetentionBucket(s3, endpoints.bucket), tenancy, ...(deps?.now ? { now: deps.now } : {}) }).then(
          (retention) => ({ retention }),
          (error: unknown) => ({ retentionFailure: (error as Error).message ?? String(error) }),
        );
      }
      return { ...(await compactAndErase({ ...deps, store, erasures: new StoredErasures(store, secret) }, secret, pending)), ...swept };
    });
  } finally {
    s3.destroy();
    dynamodb?.destroy();
  }
}

/** Time after the end of an hour before the local timer compacts it: the poller lands within seconds. */
export const LOCAL_SETTLE_MS = 60_000;
export const LOCAL_COMPACTION_INTERVAL_MS = 60_000;

/** What one compaction tick did, in words for the log. */
export interface CompactionTick {
  compacted: string[];
  failed: string[];
  /** Hours deleted past their organization's retention. */
  expired?: string[];
  retentionFailure?: string;
}

/** One tick in this process: every closed, settled hour compacted through the shared steps. */
function compactInProcess(endpoints: Parameters<typeof compactLocal>[0], paths: LocalPaths): () => Promise<CompactionTick> {
  return async () => {
    const run = await compactLocal(endpoints, paths, { settleMs: LOCAL_SETTLE_MS });
    return {
      compacted: run.compacted.filter((c) => c.outcome === 'compacted').map((c) => `${c.slice.orgId}/${c.slice.dt}/${c.slice.hour}`),
      failed: run.failed.map((failure) => `${failure.slice}: ${failure.error}`),
      ...(run.retentionFailure ? { retentionFailure: run.retentionFailure } : {}),
      expired: (run.retention?.deleted ?? []).map((hour) => `${hour.slice.orgId}/${hour.slice.dt}/${hour.slice.hour}${hour.deleteCompacted && !hour.compactedDeferred ? ' (compacted objects)' : ''}`),
    };
  };
}

/** One tick of the deployed bundles: the planner's scheduled run, then the worker on what it queued (`npm start -- --bundled`). */
export function bundledCompaction(bundled: { compact(): Promise<{ slices: number; batchItemFailures: { itemIdentifier: string }[] }> }, paths: LocalPaths): () => Promise<CompactionTick> {
  return async () => {
    const { slices, batchItemFailures } = await withCompactionLock(paths, () => bundled.compact());
    return {
      compacted: slices - batchItemFailures.length > 0 ? [`${slices - batchItemFailures.length} slice(s) by the bundled worker`] : [],
      failed: batchItemFailures.map((failure) => `message ${failure.itemIdentifier}`),
    };
  };
}

/** The timer of `npm start`: compacts closed hours every `intervalMs`, one run at a time. */
export function startCompactionTimer(options: {
  endpoints: Parameters<typeof compactLocal>[0];
  paths: LocalPaths;
  intervalMs?: number;
  log: (line: string) => void;
  /** One run; the default compacts in this process. */
  compactOnce?: () => Promise<CompactionTick>;
}): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const compactOnce = options.compactOnce ?? compactInProcess(options.endpoints, options.paths);
  const tick = () => {
    if (running) return;
    running = compactOnce()
      .then(
        ({ compacted, failed, expired = [], retentionFailure }) => {
          if (retentionFailure) options.log(`the retention sweep failed, retrying on the next tick: ${retentionFailure}`);
          if (expired.length > 0) options.log(`deleted ${expired.length} hour(s) past their retention: ${expired.join(', ')}`);
          if (compacted.length > 0) options.log(`compacted ${compacted.length} hour(s): ${compacted.join(', ')}`);
          for (const failure of failed) options.log(`compaction of ${failure} failed, retrying on the next tick`);
        },
        (error: unknown) => {
          if (!(error instanceof CompactionBusyError)) options.log(`compaction failed, retrying on the next tick: ${(error as Error).message}`);
        },
      )
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(tick, options.intervalMs ?? LOCAL_COMPACTION_INTERVAL_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
