import { generationOfCompactedKey, partPlanPrefix, sliceId } from '../lake/keys/compacted-keys.js';
import type { PendingSlice } from './compact-pending.js';
import { compactionInputs, currentObjects, sliceWork } from '../lake/lifecycle/compact-slice.js';
import { READERS_GRACE_MS } from '../lake/readers-grace.js';
import { type PartPlan, type PartPlanRef, isPlanCurrent, parsePartPlan, partWorkersFor, planKeyOf, planRef, serializePartPlan } from '../lake/lifecycle/part-plan.js';
import type { CompactionDeps, StoredObject } from '../lake/ports.js';

export interface PartPlanningDeps extends Pick<CompactionDeps, 'store' | 'logger' | 'now' | 'supersededGraceMs'> {
  /** Listed input bytes one worker is given before the hour is split (default {@link DEFAULT_PART_WORKER_BYTES}). */
  partWorkerBytes?: number;
}

const DATASETS = ['traces', 'spans'] as const;

/**
 * An upper bound of the bytes of one compacted row, used only to spare the planner three LISTs per recompacted
 * slice: a previous generation of at most `partWorkerBytes / 1 KiB` rows (~390,000 at the default) plus the new raw
 * objects within the limit is compacted by one worker without listing anything, as before part workers.
 */
const COMPACTED_BYTES_PER_ROW_BOUND = 1024;

/** A plan of the slice for `generation` already written and still able to complete, if any. */
async function currentPlan(deps: PartPlanningDeps, pending: PendingSlice, generation: number): Promise<PartPlanRef | undefined> {
  const previousFiles = new Set(DATASETS.flatMap((dataset) => pending.manifest?.[dataset].files ?? []));
  const candidates = (await deps.store.list(partPlanPrefix(pending.slice))).filter((object) => generationOfCompactedKey(object.key) === generation);
  for (const object of candidates.sort((a, b) => (a.key < b.key ? -1 : 1))) {
    const bytes = await deps.store.get(object.key);
    if (!bytes) continue;
    let plan: PartPlan;
    try {
      plan = parsePartPlan(bytes, pending.slice);
    } catch (error) {
      deps.logger?.error('A part plan cannot be read; the slice is planned afresh', { key: object.key, error });
      continue;
    }
    const ref = planRef(plan);
    if (planKeyOf(pending.slice, ref) === object.key && isPlanCurrent(plan, pending.raw, previousFiles)) return ref;
  }
  return undefined;
}

/**
 * The part plan of a pending slice too large for one worker, or undefined when one worker compacts it. A plan of
 * the next generation that was written before and can still complete is sent again as it is (its parts may be
 * done or running; new raw objects wait for the next generation); else, when the slice's listed input (the
 * previous generation's objects and the raw objects not covered) passes `partWorkerBytes`, a new plan is written
 * (before any message names it). A new slice below the limit costs no request here.
 */
export async function partPlanFor(deps: PartPlanningDeps, pending: PendingSlice): Promise<PartPlanRef | undefined> {
  if (pending.reason !== 'new' && pending.reason !== 'uncovered') return undefined;
  const bytesPerWorker = deps.partWorkerBytes;
  const previous = pending.manifest;
  const now = (deps.now ?? (() => new Date()))().getTime();
  const uncovered = sliceWork(previous, pending.raw, now, deps.supersededGraceMs ?? READERS_GRACE_MS).pending;
  const sizeOf = (objects: readonly StoredObject[]) => objects.reduce((sum, object) => sum + object.size, 0);
  // A small slice is decided from the listing it has (the raw objects) and its manifest's row counts, at no request.
  const previousRows = previous ? previous.traces.rows + previous.spans.rows : 0;
  if (partWorkersFor(sizeOf(uncovered.traces) + sizeOf(uncovered.spans) + previousRows * COMPACTED_BYTES_PER_ROW_BOUND, bytesPerWorker) === 1) return undefined;

  const generation = (previous?.generation ?? 0) + 1;
  const reused = await currentPlan(deps, pending, generation);
  if (reused) return reused;

  const planned = {} as Pick<PartPlan, 'traces' | 'spans'>;
  let inputBytes = 0;
  for (const dataset of DATASETS) {
    const before = previous?.[dataset];
    const rewrite = uncovered[dataset].length > 0 || !before;
    // Only key, ETag and size: the plan's id is a hash of its JSON, which must not depend on what a listing adds.
    const inputs = (rewrite ? compactionInputs(before ? await currentObjects(deps, dataset, pending.slice, before.files) : [], uncovered[dataset]) : []).map(({ key, etag, size }) => ({ key, etag, size }));
    inputBytes += sizeOf(inputs);
    planned[dataset] = { rewrite, inputs, covered: pending.raw[dataset].map(({ key, etag }) => ({ key, etag })) };
  }
  const parts = partWorkersFor(inputBytes, bytesPerWorker);
  if (parts === 1) return undefined;
  const plan: PartPlan = { version: 1, org_id: pending.slice.orgId, dt: pending.slice.dt, hour: pending.slice.hour, generation, parts, ...planned };
  const ref = planRef(plan);
  await deps.store.put(planKeyOf(pending.slice, ref), serializePartPlan(plan), 'application/json');
  deps.logger?.info('Split a slice across part workers', { slice: sliceId(pending.slice), generation, parts, plan: ref.id, inputBytes });
  return ref;
}
