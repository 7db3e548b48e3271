import { DeleteObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { OverflowStore } from '../../core/publish/ports.js';
import { DependencyUnavailableError } from '../../../shared/domain/errors.js';

export class S3OverflowStore implements OverflowStore {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  async put(key: string, body: Uint8Array): Promise<{ bucket: string; key: string }> {
    try {
      await this.client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: 'application/json', ContentEncoding: 'gzip' }),
      );
    } catch (error) {
      throw new DependencyUnavailableError('s3', `storing an oversized trace failed: ${(error as Error).name}`, { cause: error });
    }
    return { bucket: this.bucket, key };
  }

  /**
   * One DeleteObject per key: a request has only a few traces over 1 MB, and the role may delete nothing else.
   * A key already gone is a success (https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObject.html).
   */
  async delete(keys: readonly string[]): Promise<void> {
    const results = await Promise.allSettled(keys.map((Key) => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key }))));
    const failed = results.flatMap((result) => (result.status === 'rejected' ? [result.reason as Error] : []));
    if (failed.length > 0) {
      throw new DependencyUnavailableError('s3', `deleting ${failed.length} of ${keys.length} overflow objects failed: ${failed[0]!.name}`, { cause: failed[0] });
    }
  }
}
