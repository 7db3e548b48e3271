import type { DatasetName } from '../datasets/registry.js';
import { type Slice, sliceId } from './keys/compacted-keys.js';

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
  return { ...(parsed as SliceManifest), traces: datasetManifest(parsed.traces, 'traces'), spans: datasetManifest(parsed.spans, 'spans'), superseded };
}

export function serializeManifest(manifest: SliceManifest): Uint8Array {
  return Buffer.from(`${JSON.stringify(manifest)}\n`);
}
