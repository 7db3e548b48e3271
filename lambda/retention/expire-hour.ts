import { type Slice, compactedSlicePrefix, partPlanPrefix } from '../compaction/compaction-keys.js';
import type { CompactionStore, StoredObject } from '../compaction/ports.js';
import { partitionPath, rawPartitionPrefix } from '../datasets/object-keys.js';
import { DATA_PREFIXES } from '../shared/service-constants.js';
import type { HourExpiry } from './ports.js';

/** What deleting one expired hour did. */
export interface HourDeletion extends HourExpiry {
  objectsDeleted: number;
  bytesDeleted: number;
}

/**
 * Deletes one expired hour's objects, in the order that never leaves a reader or a compaction a manifest naming a
 * missing object: its raw objects first (the manifest hides the covered ones anyway; from here the planner plans
 * nothing for the hour), then its manifest (from here no reader reads the hour: a slice without a manifest is read
 * from its raw objects, and there are none), then, only when asked (a later run, past the readers' grace), its
 * compacted objects and part plans, which no manifest names any more. Runs in the hour's compaction message group
 * deployed and under the compaction lock locally, so never beside a compaction of the hour. Writes nothing.
 */
export async function expireHour(store: Pick<CompactionStore, 'list' | 'delete'>, { slice, deleteCompacted }: HourExpiry): Promise<HourDeletion> {
  const deletion: HourDeletion = { slice, deleteCompacted, objectsDeleted: 0, bytesDeleted: 0 };
  const deleteUnder = async (prefixes: readonly string[]) => {
    const objects: StoredObject[] = [];
    for (const prefix of prefixes) objects.push(...(await store.list(prefix)));
    if (objects.length === 0) return;
    await store.delete(objects.map((object) => object.key));
    deletion.objectsDeleted += objects.length;
    deletion.bytesDeleted += objects.reduce((sum, object) => sum + object.size, 0);
  };
  await deleteUnder([rawPartitionPrefix('traces', slice), rawPartitionPrefix('spans', slice)]);
  await deleteUnder([manifestPrefix(slice)]);
  if (deleteCompacted) await deleteUnder([compactedSlicePrefix('traces', slice), compactedSlicePrefix('spans', slice), partPlanPrefix(slice)]);
  return deletion;
}

const manifestPrefix = (slice: Slice) => `${DATA_PREFIXES.manifests}${partitionPath(slice)}`;
