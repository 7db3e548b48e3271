import type { DatasetName } from '../datasets/registry.js';
import { sliceId } from './keys/compacted-keys.js';
import { sliceOfRawKey } from './keys/raw-keys.js';
import type { SliceManifest } from './manifest.js';

/**
 * The objects that hold every row exactly once (for compacted slices) or as landed (for the rest):
 * per slice, the compacted objects its manifest names plus the raw objects the manifest does not cover;
 * the raw objects of slices without a manifest. Each manifest must have been read once, before the
 * listing of raw objects was taken: see "What readers see" in docs/landing.md.
 */
export function exactlyOnceKeys(dataset: DatasetName, manifests: readonly SliceManifest[], rawKeys: readonly string[]): string[] {
  const bySlice = new Map(manifests.map((manifest) => [sliceId({ orgId: manifest.org_id, dt: manifest.dt, hour: manifest.hour }), manifest]));
  const keys = manifests.flatMap((manifest) => manifest[dataset].files);
  for (const key of rawKeys) {
    const slice = sliceOfRawKey(key);
    const manifest = slice && bySlice.get(sliceId(slice));
    if (!manifest || !manifest[dataset].covered.some((entry) => entry.key === key)) keys.push(key);
  }
  return keys.sort();
}
