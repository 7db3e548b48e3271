import type { LakeStore } from '../lake/ports.js';
import type { RetentionBucket } from './ports.js';

/** Adapter: any compaction store as the sweep's bucket, each prefix listed whole (in-memory buckets of the tests and the bench). */
export function listedRetentionBucket(store: Pick<LakeStore, 'list' | 'delete'>): RetentionBucket {
  return {
    listBefore: async (prefix, bound) => (await store.list(prefix)).filter((object) => object.key < bound).sort((a, b) => (a.key < b.key ? -1 : 1)),
    delete: (keys) => store.delete(keys),
  };
}
