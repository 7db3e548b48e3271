import type { DatasetName } from '../landing/landing-schema.js';
import { type Slice, sliceId, sliceOfRawKey, sliceStartMillis } from './compaction-keys.js';
import { type CompactionDeps, type SliceCompaction, type StoredObject, compactSlice } from './compact-slice.js';

const HOUR_MS = 60 * 60 * 1000;

/** Time after an hour ends before it counts as closed: the landing's batching window and retries, with room. */
export const DEFAULT_SETTLE_MS = 10 * 60 * 1000;

export interface PendingOptions {
  /** Compact hours that are still open too (`npm run compact`); the schedule compacts closed hours only. */
  includeOpenHours?: boolean;
  settleMs?: number;
  /** Checked before each slice; false stops the run early (e.g. the Lambda is near its timeout). */
  shouldContinue?: () => boolean;
}

export interface CompactionRun {
  slicesSeen: number;
  compacted: SliceCompaction[];
  /** Slices skipped because their hour is not closed yet. */
  open: number;
  failed: { slice: string; error: string }[];
  /** True when `shouldContinue` stopped the run before every slice was looked at. */
  stoppedEarly: boolean;
}

/**
 * Raw objects of every slice, from one listing of each raw prefix. Raw objects expire a few days after they
 * land (see "Retention" in docs/landing.md), so the listing is bounded by the traffic of those days.
 */
async function rawSlices(deps: CompactionDeps): Promise<Map<string, { slice: Slice; raw: Record<DatasetName, StoredObject[]> }>> {
  const slices = new Map<string, { slice: Slice; raw: Record<DatasetName, StoredObject[]> }>();
  for (const dataset of ['traces', 'spans'] as const) {
    for (const object of await deps.store.list(`${dataset}/`)) {
      const slice = sliceOfRawKey(object.key);
      if (!slice) continue;
      const id = sliceId(slice);
      const entry = slices.get(id) ?? { slice, raw: { traces: [], spans: [] } };
      entry.raw[dataset].push(object);
      slices.set(id, entry);
    }
  }
  return slices;
}

/**
 * Compacts every slice with raw objects its manifest does not cover yet (new slices, late data, replays,
 * overwritten raw objects), and cleans up generations past their grace period. A failing slice is logged and
 * skipped; the others go on, and the run reports it.
 */
export async function compactPending(deps: CompactionDeps, options: PendingOptions = {}): Promise<CompactionRun> {
  const now = (deps.now ?? (() => new Date()))().getTime();
  const settle = options.settleMs ?? DEFAULT_SETTLE_MS;
  const run: CompactionRun = { slicesSeen: 0, compacted: [], open: 0, failed: [], stoppedEarly: false };
  const slices = [...(await rawSlices(deps)).values()].sort((a, b) => (sliceId(a.slice) < sliceId(b.slice) ? -1 : 1));
  for (const { slice, raw } of slices) {
    run.slicesSeen++;
    if (!options.includeOpenHours && sliceStartMillis(slice) + HOUR_MS + settle > now) {
      run.open++;
      continue;
    }
    if (options.shouldContinue && !options.shouldContinue()) {
      run.stoppedEarly = true;
      break;
    }
    try {
      const result = await compactSlice(deps, slice, raw);
      if (result.outcome !== 'up-to-date') {
        run.compacted.push(result);
        deps.logger?.info('Compacted a slice', { ...result, slice: sliceId(slice) });
      }
    } catch (error) {
      run.failed.push({ slice: sliceId(slice), error: (error as Error).message ?? String(error) });
      deps.logger?.error('Compaction of a slice failed; it stays on its raw objects until the next run', { slice: sliceId(slice), error });
    }
  }
  return run;
}
