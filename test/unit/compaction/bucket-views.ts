import { parquetReadObjects } from 'hyparquet';
import { sliceOfManifestKey } from '../../../lambda/lake/keys/compacted-keys.js';
import { type SliceManifest, parseManifest } from '../../../lambda/lake/manifest.js';
import { LANDED_PARQUET_DECOMPRESSORS } from '../../../lambda/lake/lifecycle/parquet-rows.js';
import { exactlyOnceKeys } from '../../../lambda/lake/read-plan.js';
import type { DatasetName } from '../../../lambda/datasets/registry.js';
import type { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';

/** The rows of one Parquet object in the bucket, timestamps as the raw microseconds. */
export async function rowsOf(bucket: MemoryBucket, key: string): Promise<Record<string, unknown>[]> {
  const { body } = bucket.objects.get(key)!;
  const file = body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer;
  return (await parquetReadObjects({ file, compressors: LANDED_PARQUET_DECOMPRESSORS, parsers: { timestampFromMicroseconds: (v: bigint) => v } })) as Record<string, unknown>[];
}

/** Every slice manifest in the bucket. */
export function manifests(bucket: MemoryBucket): SliceManifest[] {
  return bucket.keys('manifests/').map((key) => parseManifest(bucket.objects.get(key)!.body, sliceOfManifestKey(key)!));
}

/** What a reader of the exactly-once view sees: the manifests first, then the objects they point to. */
export async function visible(bucket: MemoryBucket, dataset: DatasetName): Promise<Record<string, unknown>[]> {
  const keys = exactlyOnceKeys(dataset, manifests(bucket), bucket.keys(`${dataset}/`));
  return (await Promise.all(keys.map((key) => rowsOf(bucket, key)))).flat();
}
