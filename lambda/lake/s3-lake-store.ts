import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { type AsyncBuffer, cachedAsyncBuffer } from 'hyparquet';
import type { LakeStore, StoredObject, UploadedPart } from './ports.js';
import { deleteKeys } from './s3-delete-keys.js';

/** Objects up to this size are read in one GET; larger ones (big compacted parts) by byte ranges as the reader asks. */
const WHOLE_OBJECT_BYTES = 32 * 1024 * 1024;

const asArrayBuffer = (bytes: Uint8Array): ArrayBuffer => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;

/** Adapter: the data bucket for compaction (list, read pinned to an ETag, write whole or by multipart upload, delete). */
export class S3LakeStore implements LakeStore {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  async list(prefix: string): Promise<StoredObject[]> {
    const objects: StoredObject[] = [];
    let ContinuationToken: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken }));
      for (const item of page.Contents ?? []) objects.push({ key: item.Key!, etag: item.ETag ?? '', size: item.Size ?? 0 });
      ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (ContinuationToken);
    return objects;
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    try {
      const response = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return await response.Body!.transformToByteArray();
    } catch (error) {
      if (error instanceof NoSuchKey || (error as { name?: string }).name === 'NoSuchKey') return undefined;
      throw error;
    }
  }

  // IfMatch: an object overwritten after it was listed fails the read (412) instead of being folded in under
  // its old ETag; the slice is then compacted again on the next run.
  private async read(object: StoredObject, range?: string): Promise<Uint8Array> {
    const response = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: object.key, IfMatch: object.etag || undefined, Range: range }));
    return await response.Body!.transformToByteArray();
  }

  async open(object: StoredObject): Promise<AsyncBuffer> {
    if (object.size <= WHOLE_OBJECT_BYTES) return asArrayBuffer(await this.read(object));
    return cachedAsyncBuffer({
      byteLength: object.size,
      slice: async (start, end = object.size) => asArrayBuffer(await this.read(object, `bytes=${start}-${end - 1}`)),
    });
  }

  async put(key: string, body: Uint8Array, contentType: string): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType }));
  }

  // Checksums stated, not left to the SDK's defaults: the upload is created with CRC32, each part is sent with
  // its CRC32, and completion names every part's checksum, as S3 requires of an upload created with an algorithm.
  async createMultipartUpload(key: string, contentType: string): Promise<string> {
    const { UploadId } = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, ContentType: contentType, ChecksumAlgorithm: 'CRC32' }));
    if (!UploadId) throw new Error(`CreateMultipartUpload of ${key} returned no upload id`);
    return UploadId;
  }

  async uploadPart(key: string, uploadId: string, partNumber: number, body: Uint8Array): Promise<UploadedPart> {
    const { ETag, ChecksumCRC32 } = await this.client.send(
      new UploadPartCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, PartNumber: partNumber, Body: body, ContentLength: body.byteLength, ChecksumAlgorithm: 'CRC32' }),
    );
    if (!ETag) throw new Error(`UploadPart ${partNumber} of ${key} returned no ETag`);
    return { partNumber, etag: ETag, ...(ChecksumCRC32 ? { checksumCrc32: ChecksumCRC32 } : {}) };
  }

  async completeMultipartUpload(key: string, uploadId: string, parts: readonly UploadedPart[]): Promise<void> {
    // CompleteMultipartUpload can answer 200 with an error in its body; the SDK turns that into a thrown error.
    await this.client.send(
      new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts.map(({ partNumber, etag, checksumCrc32 }) => ({ PartNumber: partNumber, ETag: etag, ChecksumCRC32: checksumCrc32 })) } }),
    );
  }

  async abortMultipartUpload(key: string, uploadId: string): Promise<void> {
    await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }));
  }

  delete(keys: readonly string[]): Promise<void> {
    return deleteKeys(this.client, this.bucket, keys);
  }
}
