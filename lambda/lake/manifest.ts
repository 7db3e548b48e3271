import type { DatasetName } from '../datasets/registry.js';
import { type Slice, sliceId } from './keys/compacted-keys.js';
import { sliceOfRawKey } from './keys/raw-keys.js';

/** A raw object folded into the compacted objects, by key and the ETag it had when it was read. */
export interface CoveredObject {
  key: string;
  etag: string;
}

/** What a slice's readers use for one dataset: these compacted objects, plus every raw object not covered. */
export interface DatasetManifest {
  /** Keys of the compacted objects of the current generation. */
  files: string[];
  rows: number;
  covered: CoveredObject[];
}

/**
 * The manifest of a slice (`manifests/org_id=…/dt=…/hour=…/manifest.json`), one JSON line so that
 * Athena's JSON SerDe reads it as one row. Replaced by a single PUT, which is the moment readers switch.
 */
export interface SliceManifest {
  version: 1;
  org_id: string;
  dt: string;
  hour: string;
  generation: number;
  compacted_at: string;
  traces: DatasetManifest;
  spans: DatasetManifest;
  /** Earlier generations kept for readers that started before they were replaced; deleted after a grace period. */
  superseded: { generation: number; superseded_at: string; files: string[] }[];
  /** Present when the rewrite that wrote this generation applied erasure requests: what is left to do after the switch. */
  erasure?: ManifestErasure;
}

/**
 * What a rewrite that applied erasure requests removed, written with the switch: a run stopped between the switch
 * and the outcomes finishes from it on its retry (see compactSlice), so the outcomes are the rewrite's, not what a
 * second look at the already erased hour would find.
 */
export interface ManifestErasure {
  /** Per request id applied: rows of the traces it matched (a trace two requests matched counts for both). */
  rows_removed: Record<string, number>;
  bytes_rewritten: number;
  bytes_of_hour: number;
  objects_deleted: number;
  /** Raw objects of the slice that held an erased row: deleted after the switch (before it, they may hold the only copy of other rows). */
  raw_holders: string[];
}

/**
 * The manifest that switches a slice to `generation`: its datasets' objects, and the earlier generations readers
 * may still be reading (`kept`, plus the previous generation's `replaced` objects from now on). One builder for
 * a slice compacted by one worker and for the switch of its part workers.
 */
export function nextManifest(
  slice: Slice,
  generation: number,
  datasets: Pick<SliceManifest, 'traces' | 'spans'>,
  previous: SliceManifest | undefined,
  { kept, replaced }: { kept: SliceManifest['superseded']; replaced: string[] },
  now: Date,
): SliceManifest {
  const superseded = [...kept];
  if (previous && replaced.length > 0) superseded.push({ generation: previous.generation, superseded_at: now.toISOString(), files: replaced });
  return { version: 1, org_id: slice.orgId, dt: slice.dt, hour: slice.hour, generation, compacted_at: now.toISOString(), traces: datasets.traces, spans: datasets.spans, superseded };
}

export class InvalidManifestError extends Error {
  override name = 'InvalidManifestError';
}

const isStringArray = (value: unknown): value is string[] => Array.isArray(value) && value.every((item) => typeof item === 'string');

function datasetManifest(value: unknown, name: DatasetName): DatasetManifest {
  const candidate = value as Partial<DatasetManifest> | null;
  const covered = candidate?.covered;
  if (
    !candidate ||
    !isStringArray(candidate.files) ||
    typeof candidate.rows !== 'number' ||
    !Array.isArray(covered) ||
    !covered.every((item) => typeof (item as CoveredObject | null)?.key === 'string' && typeof (item as CoveredObject).etag === 'string')
  ) {
    throw new InvalidManifestError(`manifest: ${name} must have files, rows and covered`);
  }
  return { files: candidate.files, rows: candidate.rows, covered };
}

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/** The erasure record of a manifest of `slice`: a run deletes the raw objects it names, so only raw keys of this slice are accepted. */
function manifestErasure(value: unknown, slice: Slice): ManifestErasure {
  const candidate = value as Partial<ManifestErasure> | null;
  const removed = candidate?.rows_removed;
  const ofSlice = (key: string) => {
    const owner = sliceOfRawKey(key);
    return owner !== undefined && sliceId(owner) === sliceId(slice);
  };
  if (
    typeof removed !== 'object' ||
    removed === null ||
    Array.isArray(removed) ||
    !Object.values(removed).every(isCount) ||
    !isCount(candidate?.bytes_rewritten) ||
    !isCount(candidate.bytes_of_hour) ||
    !isCount(candidate.objects_deleted) ||
    !isStringArray(candidate.raw_holders) ||
    !candidate.raw_holders.every(ofSlice)
  ) {
    throw new InvalidManifestError(`manifest of ${sliceId(slice)}: erasure must have rows_removed per request, byte and object counts, and raw keys of the slice`);
  }
  return { rows_removed: { ...removed }, bytes_rewritten: candidate.bytes_rewritten, bytes_of_hour: candidate.bytes_of_hour, objects_deleted: candidate.objects_deleted, raw_holders: candidate.raw_holders };
}

/** Parses a stored manifest; a manifest of another slice or shape is an error, never guessed at. */
export function parseManifest(bytes: Uint8Array, slice: Slice): SliceManifest {
  let parsed: Partial<SliceManifest>;
  try {
    parsed = JSON.parse(Buffer.from(bytes).toString('utf8')) as Partial<SliceManifest>;
  } catch (error) {
    throw new InvalidManifestError(`manifest of ${sliceId(slice)} is not JSON`, { cause: error });
  }
  if (parsed.version !== 1 || parsed.org_id !== slice.orgId || parsed.dt !== slice.dt || parsed.hour !== slice.hour || !Number.isSafeInteger(parsed.generation)) {
    throw new InvalidManifestError(`manifest of ${sliceId(slice)} has another version or slice`);
  }
  const superseded = Array.isArray(parsed.superseded) ? parsed.superseded.filter((entry) => isStringArray(entry?.files)) : [];
  const { erasure, ...rest } = parsed as SliceManifest;
  return {
    ...rest,
    traces: datasetManifest(parsed.traces, 'traces'),
    spans: datasetManifest(parsed.spans, 'spans'),
    superseded,
    ...(erasure === undefined ? {} : { erasure: manifestErasure(erasure, slice) }),
  };
}

export function serializeManifest(manifest: SliceManifest): Uint8Array {
  return Buffer.from(`${JSON.stringify(manifest)}\n`);
}
