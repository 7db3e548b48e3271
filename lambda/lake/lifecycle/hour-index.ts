import { hourIndexPrefix } from '../keys/erasure-keys.js';
import type { Partition } from '../keys/partition.js';
import type { LakeStore } from '../ports.js';

/**
 * Deletes one hour's erasure index; called before a switch to a generation the index does not describe. Killed
 * between the switch and the new index's write, the hour is then unindexed (always searched by an erasure), never
 * indexed by the ids of the generation before.
 */
export async function dropHourIndex(store: Pick<LakeStore, 'list' | 'delete'>, slice: Partition): Promise<void> {
  const keys = (await store.list(hourIndexPrefix(slice))).map((object) => object.key);
  if (keys.length > 0) await store.delete(keys);
}
