import { createHash } from 'node:crypto';
import type { DatasetName } from '../../datasets/registry.js';
import { HASH_BUCKETS, bucketAlignedParts } from '../../datasets/hash-parts.js';
import { type Slice, partObjectKey, partPlanKey, sliceId } from '../keys/compacted-keys.js';
import type { CoveredObject } from '../manifest.js';
import type { StoredObject } from '../ports.js';

/**
 * Listed input bytes (the previous generation's objects and the raw objects not covered, both datasets) one worker
 * is given. Past it the planner splits the hour across part workers. Raw rows of the one organization at 1,000
 * traces/s take ~67 bytes (~0.6 GB per million traces of 8 spans), so 320 MiB is ~5M input rows: inside the ~6M rows
 * one worker finishes in its 15 minutes even when no input is hash-ordered (docs/landing.md, "Capacity"), and the
 * ~2.2 GB hour of that organization gets 8 part workers, the count the cost model finds for "each within 10
 * minutes" (bench/cost-model.ts).
 */
export const DEFAULT_PART_WORKER_BYTES = 320 * 1024 * 1024;

/**
 * Part workers for an hour of `inputBytes`: 1 (no split) up to `bytesPerWorker`, else the power of two that gives
 * each at most `bytesPerWorker`, so that each worker's range is one contiguous run of every hash-ordered input's
 * row groups; at most the landing's 128 hash buckets.
 */
export function partWorkersFor(inputBytes: number, bytesPerWorker = DEFAULT_PART_WORKER_BYTES): number {
  if (inputBytes <= bytesPerWorker) return 1;
  return Math.min(HASH_BUCKETS, bucketAlignedParts(Math.ceil(inputBytes / bytesPerWorker)));
}

/** One dataset of a part plan. */
export interface PlannedDataset {
  /**
   * Rewritten by the part workers: from `inputs`, read in this order (the previous generation's objects, then the
   * raw objects not covered, by key). When false the dataset had nothing new and keeps the previous generation's
   * objects.
   */
  rewrite: boolean;
  inputs: StoredObject[];
  /** Raw objects the manifest records as folded in once this plan is switched in: every raw object listed. */
  covered: CoveredObject[];
}

/**
 * The input set of one compaction of a slice split across part workers, written by the planner before it sends
 * any message, so that every part worker, and every rerun of one, reads exactly the same objects at the same
 * ETags (and so writes the same bytes), and the switch records exactly what the parts folded in.
 */
export interface PartPlan {
  version: 1;
  org_id: string;
  dt: string;
  hour: string;
  /** The generation the parts make; the plan holds only while the slice's manifest is at `generation - 1` (0: none). */
  generation: number;
  /** Part workers, a power of two: worker w writes hash part w of `parts` of each rewritten dataset. */
  parts: number;
  traces: PlannedDataset;
  spans: PlannedDataset;
}

/** A plan as messages name it: enough to find its object. */
export interface PartPlanRef {
  generation: number;
  id: string;
  parts: number;
}

export class InvalidPartPlanError extends Error {
  override name = 'InvalidPartPlanError';
}

/** The plan's id: a hash of its content, so that planning the same input set twice gives the same keys. */
export function partPlanId(plan: PartPlan): string {
  return createHash('sha256').update(JSON.stringify(plan)).digest('hex').slice(0, 16);
}

export const planRef = (plan: PartPlan): PartPlanRef => ({ generation: plan.generation, id: partPlanId(plan), parts: plan.parts });

export const planKeyOf = (slice: Slice, ref: PartPlanRef) => partPlanKey(slice, ref.generation, ref.id);

/** The object part `part` of the plan writes for `dataset`. */
export const planPartKey = (slice: Slice, ref: PartPlanRef, dataset: DatasetName, part: number) => partObjectKey(dataset, slice, ref.generation, ref.id, part, ref.parts);

export function serializePartPlan(plan: PartPlan): Uint8Array {
  return Buffer.from(`${JSON.stringify(plan)}\n`);
}

const isStoredObject = (value: unknown): value is StoredObject => {
  const o = value as Partial<StoredObject> | null;
  return typeof o?.key === 'string' && typeof o.etag === 'string' && typeof o.size === 'number';
};

function plannedDataset(value: unknown, name: DatasetName): PlannedDataset {
  const d = value as Partial<PlannedDataset> | null;
  if (
    typeof d?.rewrite !== 'boolean' ||
    !Array.isArray(d.inputs) ||
    !d.inputs.every(isStoredObject) ||
    !Array.isArray(d.covered) ||
    !d.covered.every((c) => typeof (c as CoveredObject | null)?.key === 'string' && typeof (c as CoveredObject).etag === 'string')
  ) {
    throw new InvalidPartPlanError(`part plan: ${name} must have rewrite, inputs and covered`);
  }
  return { rewrite: d.rewrite, inputs: d.inputs.map(({ key, etag, size }) => ({ key, etag, size })), covered: d.covered.map(({ key, etag }) => ({ key, etag })) };
}

/**
 * Parses a stored plan of the slice and checks its content hashes to its id, and that it is the one `ref` names when
 * given; anything else is an error.
 */
export function parsePartPlan(bytes: Uint8Array, slice: Slice, ref?: PartPlanRef): PartPlan {
  const what = ref ? `part plan ${ref.id} of ${sliceId(slice)}` : `a part plan of ${sliceId(slice)}`;
  let parsed: Partial<PartPlan> | null;
  try {
    parsed = JSON.parse(Buffer.from(bytes).toString('utf8')) as Partial<PartPlan> | null;
  } catch (error) {
    throw new InvalidPartPlanError(`${what} is not JSON`, { cause: error });
  }
  if (
    parsed?.version !== 1 ||
    parsed.org_id !== slice.orgId ||
    parsed.dt !== slice.dt ||
    parsed.hour !== slice.hour ||
    !Number.isSafeInteger(parsed.generation) ||
    !Number.isSafeInteger(parsed.parts) ||
    (ref && (parsed.generation !== ref.generation || parsed.parts !== ref.parts))
  ) {
    throw new InvalidPartPlanError(`${what} has another version, slice, generation or part count`);
  }
  // Rebuilt field by field, in the order the planner writes them, so that the id is recomputed from the same JSON.
  const plan: PartPlan = {
    version: 1,
    org_id: slice.orgId,
    dt: slice.dt,
    hour: slice.hour,
    generation: parsed.generation!,
    parts: parsed.parts!,
    traces: plannedDataset(parsed.traces, 'traces'),
    spans: plannedDataset(parsed.spans, 'spans'),
  };
  if (ref && partPlanId(plan) !== ref.id) throw new InvalidPartPlanError(`${what} does not hash to its id`);
  return plan;
}

/**
 * True while every raw input of the plan is still listed with the ETag it was planned with: the parts can still
 * read them (reads are pinned by If-Match). A plan that is no longer current never completes; it is given up and
 * the slice planned afresh.
 */
export function isPlanCurrent(plan: PartPlan, listing: Record<DatasetName, readonly StoredObject[]>, previousFiles: ReadonlySet<string>): boolean {
  return (['traces', 'spans'] as const).every((dataset) => {
    const etags = new Map(listing[dataset].map((object) => [object.key, object.etag]));
    return plan[dataset].inputs.every((input) => previousFiles.has(input.key) || etags.get(input.key) === input.etag);
  });
}
