import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { StoredObject } from '../lake/ports.js';
import { deleteKeys } from '../lake/s3-delete-keys.js';
import type { RetentionBucket } from './ports.js';

/**
 * Adapter: the data bucket for the retention sweep. A general purpose bucket lists keys in ascending order
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html: "General purpose bucket - For general
 * purpose buckets, ListObjectsV2 returns objects in lexicographical order based on their key names"; our keys
 * are ASCII, where that order is JavaScript's), so a listing can stop at the first key at or past a bound.
 */
export class S3RetentionBucket implements RetentionBucket {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  async listBefore(prefix: string, bound: string): Promise<StoredObject[]> {
    const objects: StoredObject[] = [];
    let ContinuationToken: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken }));
      for (const item of page.Contents ?? []) {
        if (item.Key! >= bound) return objects;
        objects.push({ key: item.Key!, etag: item.ETag ?? '', size: item.Size ?? 0 });
      }
      ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (ContinuationToken);
    return objects;
  }

  delete(keys: readonly string[]): Promise<void> {
    return deleteKeys(this.client, this.bucket, keys);
  }
}
