import { GetObjectCommand, NoSuchKey, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { type LandingStore, ReferencedObjectNotFoundError } from './ports.js';

/** Adapter: the data bucket for landed objects and dead letters; reads referenced traces from any bucket. */
export class S3LandingStore implements LandingStore {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  async putObject(key: string, body: Uint8Array, contentType: string): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType }));
  }

  async getObject(bucket: string, key: string): Promise<Uint8Array> {
    try {
      const response = await this.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      if (!response.Body) throw new Error(`s3://${bucket}/${key} has no body`);
      return await response.Body.transformToByteArray();
    } catch (error) {
      if (error instanceof NoSuchKey || (error as { name?: string }).name === 'NoSuchKey') {
        throw new ReferencedObjectNotFoundError(`referenced object s3://${bucket}/${key} does not exist`, { cause: error });
      }
      throw error;
    }
  }
}
