import type { DatasetName } from '../../datasets/registry.js';
import { rawPartitionPrefix } from '../keys/partition.js';
import { type Slice, compactedSlicePrefix, manifestKey, sliceId } from '../keys/compacted-keys.js';
import { type SliceCompaction, deleteUnreferenced, sliceWork, upToDate, writeCompactedObject } from './compact-slice.js';
import { READERS_GRACE_MS } from '../readers-grace.js';
import { type DatasetManifest, nextManifest, type SliceManifest, parseManifest, serializeManifest } from '../manifest.js';
import { dropHourIndex } from './hour-index.js';
import { inputShape } from './parquet-rows.js';
import { type PartPlan, type PartPlanRef, isPlanCurrent, parsePartPlan, planKeyOf, planPartKey } from './part-plan.js';
import type { CompactionDeps, StoredObject } from '../ports.js';

const DATASETS = ['traces', 'spans'] as const;

/** What one part worker did. */
export interface PartCompaction {
  slice: Slice;
  generation: number;
  part: number;
  parts: number;
  /**
   * `written` when it wrote its objects; `already-written` when a rerun found them all (a redelivered message);
   * `stale` when the slice's manifest has already reached the plan's generation, or the plan is gone (switched in
   * and cleaned up), so there is nothing left to do.
   */
  outcome: 'written' | 'already-written' | 'stale';
  rowsRead: number;
  objectsWritten: number;
}

/**
 * A switch found parts of its plan not written yet: the message is left on the queue and comes back after the
 * retry delay (see create-worker-handler.ts), by when the part workers, which run in their own message groups,
 * have had time to finish.
 */
export class PartsNotReadyError extends Error {
  override name = 'PartsNotReadyError';
}

async function manifestOf(deps: CompactionDeps, slice: Slice): Promise<SliceManifest | undefined> {
  const bytes = await deps.store.get(manifestKey(slice));
  return bytes ? parseManifest(bytes, slice) : undefined;
}

async function planOf(deps: CompactionDeps, slice: Slice, ref: PartPlanRef): Promise<PartPlan | undefined> {
  const bytes = await deps.store.get(planKeyOf(slice, ref));
  return bytes ? parsePartPlan(bytes, slice, ref) : undefined;
}

/** The objects listed under the compacted prefix of each dataset of the slice, by key. */
async function compactedObjects(deps: CompactionDeps, slice: Slice): Promise<Map<string, StoredObject>> {
  const objects = new Map<string, StoredObject>();
  for (const dataset of DATASETS) for (const object of await deps.store.list(compactedSlicePrefix(dataset, slice))) objects.set(object.key, object);
  return objects;
}

/**
 * A part worker: writes part `part` of the plan's generation, one object per rewritten dataset, from exactly the
 * inputs the plan recorded (reads pinned to their ETags), so a rerun writes the same bytes under the same keys.
 * It writes nothing readers use: only the switch's manifest names these objects. Runs in the message group of its
 * range (slice and part), so two workers never write one part at once; it deletes nothing.
 */
export async function compactPart(deps: CompactionDeps, slice: Slice, ref: PartPlanRef, part: number): Promise<PartCompaction> {
  const result: PartCompaction = { slice, generation: ref.generation, part, parts: ref.parts, outcome: 'stale', rowsRead: 0, objectsWritten: 0 };
  if (((await manifestOf(deps, slice))?.generation ?? 0) >= ref.generation) return result;
  const plan = await planOf(deps, slice, ref);
  if (!plan) return result;
  const existing = await compactedObjects(deps, slice);
  result.outcome = 'already-written';
  for (const dataset of DATASETS) {
    if (!plan[dataset].rewrite) continue;
    const key = planPartKey(slice, ref, dataset, part);
    if (existing.has(key)) continue;
    const written = await writeCompactedObject(deps, dataset, key, plan[dataset].inputs, { part, parts: ref.parts });
    result.rowsRead += written.rowsRead;
    result.objectsWritten++;
    result.outcome = 'written';
  }
  return result;
}

/**
 * The switch of a plan: once every part object of the plan exists, one PUT of the manifest naming them all (per
 * dataset, the W part objects) makes the new generation what readers see, then objects no manifest names are
 * deleted, as {@link compactSlice} does. Runs in the slice's message group, so it never overlaps another switch or
 * compaction of the slice; the manifest's generation stands in for a compare-and-set: a plan made from another
 * generation than the current one is stale and switches nothing.
 *
 * - Parts missing: throws {@link PartsNotReadyError} and writes nothing; the message is retried.
 * - Parts missing and the plan can no longer complete (an input overwritten or expired, so its reads fail): gives
 *   the plan up (outcome `up-to-date`, nothing written); the slice is still pending and the planner plans it afresh.
 */
export async function switchParts(deps: CompactionDeps, slice: Slice, ref: PartPlanRef): Promise<SliceCompaction> {
  const now = (deps.now ?? (() => new Date()))();
  const previous = await manifestOf(deps, slice);
  const base = previous?.generation ?? 0;
  const unchanged = upToDate(slice, previous);
  if (base !== ref.generation - 1) {
    deps.logger?.info('A part plan was already switched in or replaced; nothing to switch', { slice: sliceId(slice), plan: ref, generation: base });
    return unchanged;
  }
  const plan = await planOf(deps, slice, ref);
  if (!plan) return unchanged;

  const existing = await compactedObjects(deps, slice);
  const missing = DATASETS.flatMap((dataset) => (plan[dataset].rewrite ? Array.from({ length: ref.parts }, (_, part) => planPartKey(slice, ref, dataset, part)) : [])).filter((key) => !existing.has(key));
  if (missing.length > 0) {
    const listing = { traces: await deps.store.list(rawPartitionPrefix('traces', slice)), spans: await deps.store.list(rawPartitionPrefix('spans', slice)) };
    const previousFiles = new Set([...(previous?.traces.files ?? []), ...(previous?.spans.files ?? [])]);
    if (!isPlanCurrent(plan, listing, previousFiles)) {
      deps.logger?.error('A part plan can no longer complete (an input changed or expired); it is given up and the slice planned again', { slice: sliceId(slice), plan: ref });
      return unchanged;
    }
    throw new PartsNotReadyError(`${missing.length} of the part objects of plan ${ref.id} (generation ${ref.generation}) of ${sliceId(slice)} are not written yet`);
  }

  const rows: Record<DatasetName, number> = { traces: 0, spans: 0 };
  const datasets: Partial<Record<DatasetName, DatasetManifest>> = {};
  const replaced: string[] = [];
  for (const dataset of DATASETS) {
    const planned = plan[dataset];
    const before = previous?.[dataset];
    if (!planned.rewrite && before) {
      datasets[dataset] = { ...before, covered: planned.covered };
      rows[dataset] = before.rows;
      continue;
    }
    const files = Array.from({ length: ref.parts }, (_, part) => planPartKey(slice, ref, dataset, part));
    // Rows from each part's footer: the parts were written by other invocations.
    for (const key of files) rows[dataset] += (await inputShape(await deps.store.open(existing.get(key)!))).rows;
    datasets[dataset] = { files, rows: rows[dataset], covered: planned.covered };
    replaced.push(...(before?.files ?? []));
  }
  const { kept } = sliceWork(previous, { traces: [], spans: [] }, now.getTime(), deps.supersededGraceMs ?? READERS_GRACE_MS);
  const manifest = nextManifest(slice, ref.generation, { traces: datasets.traces!, spans: datasets.spans! }, previous, { kept, replaced }, now);
  // Part workers write no hour index: the previous generation's is dropped, so the hour is searched whole.
  await dropHourIndex(deps.store, slice);
  // The switch: one PUT of one object, as for a slice compacted by one worker.
  await deps.store.put(manifestKey(slice), serializeManifest(manifest), 'application/json');
  const objectsDeleted = await deleteUnreferenced(deps, slice, manifest.traces.files.concat(manifest.spans.files), manifest.superseded, ref.generation);
  return { ...unchanged, outcome: 'compacted', generation: ref.generation, rows, hashParts: ref.parts, objectsDeleted };
}
