import { type Slice, compactedSlicePrefix, partPlanPrefix } from '../keys/compacted-keys.js';
import type { LakeStore, HourExpiry, StoredObject } from '../ports.js';
import { hourIndexPrefix } from '../keys/erasure-keys.js';
import { partitionPath, rawPartitionPrefix } from '../keys/partition.js';
import { DATA_PREFIXES } from '../../shared/service-constants.js';

/** What deleting one expired hour did. */
export interface HourDeletion extends HourExpiry {
  objectsDeleted: number;
  bytesDeleted: number;
  /**
   * Asked to delete the compacted objects, but the hour had raw objects or a manifest again (late data
   * compacted since the first step): they went, and the compacted objects wait for a later run, so that the
   * manifest just deleted keeps its readers' grace.
   */
  compactedDeferred: boolean;
}

/**
 * Deletes one expired hour's objects, in the order that never leaves a reader or a compaction a manifest naming a
 * missing object: its raw objects first (the manifest hides the covered ones anyway; from here the planner plans
 * nothing for the hour), then its manifest (from here no reader reads the hour: a slice without a manifest is read
 * from its raw objects, and there are none) and its part plans (a part workers' switch after this finds no plan),
 * then, only when asked (a later run, past the readers' grace) and
 * only when the first two steps found nothing (else a manifest was just deleted: see
 * {@link HourDeletion.compactedDeferred}), its compacted objects and erasure hour index (keyed hashes of
 * the ids those objects hold), which no manifest names. Runs in the hour's compaction message group
 * deployed and under the compaction lock locally, so never beside a compaction of the hour. Writes nothing.
 */
export async function expireHour(store: Pick<LakeStore, 'list' | 'delete'>, { slice, deleteCompacted }: HourExpiry): Promise<HourDeletion> {
  const deletion: HourDeletion = { slice, deleteCompacted, objectsDeleted: 0, bytesDeleted: 0, compactedDeferred: false };
  const deleteUnder = async (prefixes: readonly string[]): Promise<number> => {
    const objects: StoredObject[] = [];
    for (const prefix of prefixes) objects.push(...(await store.list(prefix)));
    if (objects.length === 0) return 0;
    await store.delete(objects.map((object) => object.key));
    deletion.objectsDeleted += objects.length;
    deletion.bytesDeleted += objects.reduce((sum, object) => sum + object.size, 0);
    return objects.length;
  };
  const live = (await deleteUnder([rawPartitionPrefix('traces', slice), rawPartitionPrefix('spans', slice)])) + (await deleteUnder([manifestPrefix(slice)]));
  // Its part plans too: a part worker's switch after this step would otherwise write a manifest naming the raw
  // objects just deleted, bringing the hour back. Without its plan the switch switches nothing.
  await deleteUnder([partPlanPrefix(slice)]);
  if (deleteCompacted && live > 0) deletion.compactedDeferred = true;
  else if (deleteCompacted) await deleteUnder([compactedSlicePrefix('traces', slice), compactedSlicePrefix('spans', slice), hourIndexPrefix(slice)]);
  return deletion;
}

const manifestPrefix = (slice: Slice) => `${DATA_PREFIXES.manifests}${partitionPath(slice)}`;
