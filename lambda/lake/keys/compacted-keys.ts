import { type Partition, partitionPath, rawPartitionPrefix } from './partition.js';
import type { DatasetName } from '../../datasets/registry.js';
import { DATA_PREFIXES } from '../../shared/service-constants.js';

/** One unit of compaction: an organization's hour of trace timestamps (a partition), both datasets together. */
export type Slice = Partition;

/** Root prefix of compacted objects; kept apart from the raw prefixes so that a raw glob never reads them. */
export const COMPACTED_ROOT = DATA_PREFIXES.compacted;

/** Root prefix of the per-slice manifests. */
export const MANIFEST_ROOT = DATA_PREFIXES.manifests;

export function compactedSlicePrefix(dataset: DatasetName, slice: Slice): string {
  return `${COMPACTED_ROOT}${rawPartitionPrefix(dataset, slice)}`;
}

/**
 * The compacted object of a dataset of a slice in a generation compacted by one worker: one per (slice, dataset,
 * generation), however many hash parts it was written in (an hour split across part workers has one per worker
 * instead: {@link partObjectKey}), and deterministic, so a compaction killed before its manifest switched and
 * run again overwrites its own unreferenced object. (Generations before issue 13's streamed writer were
 * `g<generation>-part-<p>-of-<n>.parquet`, several per generation; manifests naming them stay readable.)
 */
export function compactedObjectKey(dataset: DatasetName, slice: Slice, generation: number): string {
  return `${compactedSlicePrefix(dataset, slice)}g${String(generation).padStart(6, '0')}.parquet`;
}

/**
 * A part worker's object of a dataset: part `part` of `parts` of the generation a part plan makes (see
 * part-plan.ts). The plan's id is in the key so that two plans of one generation (the first abandoned because an
 * input changed under it) never write each other's keys: a switch names only objects written from its own plan.
 */
export function partObjectKey(dataset: DatasetName, slice: Slice, generation: number, planId: string, part: number, parts: number): string {
  return `${compactedSlicePrefix(dataset, slice)}g${String(generation).padStart(6, '0')}-${planId}-part-${part}-of-${parts}.parquet`;
}

/** The generation in a compacted object's key (`g<generation>.parquet`, `g<generation>-…parquet`), or undefined. */
export function generationOfCompactedKey(key: string): number | undefined {
  const match = /\/g(\d+)(?:-[^/]*)?\.(?:parquet|json)$/.exec(key);
  return match ? Number(match[1]) : undefined;
}

/**
 * Part plans of a slice: under `compacted/` (so the worker's delete grant covers them) but outside the compacted
 * tables' locations (`compacted/traces/`, `compacted/spans/`), so no table reads them.
 */
export function partPlanPrefix(slice: Slice): string {
  return `${DATA_PREFIXES.partPlans}${partitionPath(slice)}`;
}

export function partPlanKey(slice: Slice, generation: number, planId: string): string {
  return `${partPlanPrefix(slice)}g${String(generation).padStart(6, '0')}-${planId}.json`;
}

/** The one object whose single PUT switches readers of a slice from its raw to its compacted objects. */
export function manifestKey(slice: Slice): string {
  return `${MANIFEST_ROOT}${partitionPath(slice)}manifest.json`;
}

/** The slice of a manifest key (see {@link manifestKey}), or undefined for any other key. */
export function sliceOfManifestKey(key: string): Slice | undefined {
  const match = /^manifests\/org_id=([^/]+)\/dt=(\d{4}-\d{2}-\d{2})\/hour=(\d{2})\/manifest\.json$/.exec(key);
  return match ? { orgId: match[1]!, dt: match[2]!, hour: match[3]! } : undefined;
}

/** Start of the slice's hour, ms since the epoch. */
export function sliceStartMillis(slice: Slice): number {
  return Date.parse(`${slice.dt}T${slice.hour}:00:00Z`);
}

export const sliceId = (slice: Slice) => `${slice.orgId}/${slice.dt}/${slice.hour}`;
