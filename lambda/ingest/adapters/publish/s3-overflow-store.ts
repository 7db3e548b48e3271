import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
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
}
