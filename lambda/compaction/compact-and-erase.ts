import { type CompactionRun, type PendingOptions, compactOneSlice, compactPending } from './compact-pending.js';
import { sliceId } from '../lake/keys/compacted-keys.js';
import type { CompactionDeps } from '../lake/ports.js';
import { type ErasureSecret, StoredErasures, planErasures } from '../erasure/stored-erasures.js';

export interface ErasingRun extends CompactionRun {
  erasures: { found: string[]; finished: string[]; hoursRewritten: number };
}

/**
 * Compaction with erasures, in one process (`npm run compact`, the timer of `npm start`, the tests and the bench):
 * the planner's erasure step, every pending slice compacted, the hours the open requests still need rewritten, and
 * the erasure step again so that a request whose hours are all done is marked done. Deployed, the planner does the
 * two erasure steps on its schedule and sends the hours to the workers as slice messages.
 */
export async function compactAndErase(deps: CompactionDeps & { erasures: StoredErasures }, secret: ErasureSecret, options: PendingOptions = {}): Promise<ErasingRun> {
  const plan = await planErasures(deps.store, deps.erasures, secret, deps.now);
  const run = await compactPending(deps, options);
  let hoursRewritten = 0;
  for (const slice of plan.slices) {
    const outcome = await compactOneSlice(deps, slice);
    if (!outcome.ok) run.failed.push({ slice: sliceId(slice), error: outcome.error });
    else if (outcome.result.outcome !== 'up-to-date') {
      hoursRewritten++;
      run.compacted.push(outcome.result);
    }
  }
  const after = await planErasures(deps.store, deps.erasures, secret, deps.now);
  return { ...run, erasures: { found: [...plan.found, ...after.found], finished: [...plan.finished, ...after.finished], hoursRewritten } };
}
