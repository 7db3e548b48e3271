import { openSync, closeSync, readFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { type CompactionRun, type PendingOptions, compactPending } from '../../lambda/compaction/compact-pending.js';
import type { CompactionDeps } from '../../lambda/compaction/compact-slice.js';
import { S3CompactionStore } from '../../lambda/compaction/s3-compaction-store.js';
import { type LocalEndpoints, type LocalPaths, isProcessAlive, removeFile } from './local-state.js';
import { localClientConfig } from './provision.js';

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
  deps?: Partial<Omit<CompactionDeps, 'store'>>;
}

/**
 * Compacts the local stack's bucket through its S3 endpoint in this process, with the two steps the deployed
 * planner and workers share: find the pending slices, compact each one.
 */
export async function compactLocal(endpoints: Pick<LocalEndpoints, 's3' | 'bucket'>, paths: LocalPaths, options: LocalCompactionOptions = {}): Promise<CompactionRun> {
  const s3 = new S3Client(localClientConfig(endpoints.s3));
  try {
    const { deps, ...pending } = options;
    return await withCompactionLock(paths, () => compactPending({ store: new S3CompactionStore(s3, endpoints.bucket), ...deps }, pending));
  } finally {
    s3.destroy();
  }
}

/** Time after the end of an hour before the local timer compacts it: the poller lands within seconds. */
export const LOCAL_SETTLE_MS = 60_000;
export const LOCAL_COMPACTION_INTERVAL_MS = 60_000;

/** The timer of `npm start`: compacts closed hours every `intervalMs`, one run at a time. */
export function startCompactionTimer(options: {
  endpoints: Pick<LocalEndpoints, 's3' | 'bucket'>;
  paths: LocalPaths;
  intervalMs?: number;
  log: (line: string) => void;
}): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const tick = () => {
    if (running) return;
    running = compactLocal(options.endpoints, options.paths, { settleMs: LOCAL_SETTLE_MS })
      .then(
        (run) => {
          const done = run.compacted.filter((c) => c.outcome === 'compacted');
          if (done.length > 0) options.log(`compacted ${done.length} hour(s): ${done.map((c) => `${c.slice.orgId}/${c.slice.dt}/${c.slice.hour}`).join(', ')}`);
          for (const failure of run.failed) options.log(`compaction of ${failure.slice} failed, retrying on the next tick: ${failure.error}`);
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
