import { createHash } from 'node:crypto';
import type { LakeStore, StoredObject, UploadedPart } from '../../lambda/lake/ports.js';
import { S3_MULTIPART } from '../../lambda/lake/lifecycle/streamed-object.js';
import { type LandingStore, ReferencedObjectNotFoundError } from '../../lambda/landing/ports.js';

/** The writes a test can make fail: each is a point at which a real run could be killed. */
export type WriteOperation = 'put' | 'createMultipartUpload' | 'uploadPart' | 'completeMultipartUpload';

const md5 = (body: Uint8Array) => createHash('md5').update(body).digest('hex');

/**
 * One in-memory bucket behind both ports, with S3's semantics where compaction relies on them: a PUT replaces
 * an object whole, the ETag is the MD5 of the content, a read pinned to an ETag fails once the object changed.
 * Multipart uploads as S3 documents them (where s3rver is more forgiving): parts numbered 1 to 10,000, every
 * part but the last at least 5 MiB (`EntityTooSmall` at completion), the object invisible until
 * CompleteMultipartUpload, its ETag the MD5 of the parts' MD5s with `-<parts>`, an unknown upload id
 * `NoSuchUpload`. `failWrite` makes chosen writes fail (a crash at that point); `abortFails` makes aborts
 * fail too (a process killed before it could abort).
 */
export class MemoryBucket implements LandingStore, LakeStore {
  readonly objects = new Map<string, { body: Uint8Array; etag: string }>();
  /** Multipart uploads started and neither completed nor aborted, by upload id. */
  readonly uploads = new Map<string, { key: string; parts: Map<number, { body: Uint8Array; etag: string }> }>();
  failWrite: (key: string, operation: WriteOperation) => boolean = () => false;
  abortFails = false;
  gets = 0;
  private nextUpload = 1;

  async putObject(key: string, body: Uint8Array): Promise<void> {
    await this.put(key, body);
  }

  async getObject(bucket: string, key: string): Promise<Uint8Array> {
    const object = this.objects.get(key);
    if (!object) throw new ReferencedObjectNotFoundError(`s3://${bucket}/${key} does not exist`);
    return object.body;
  }

  async list(prefix: string): Promise<StoredObject[]> {
    return [...this.objects.entries()]
      .filter(([key]) => key.startsWith(prefix))
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([key, object]) => ({ key, etag: object.etag, size: object.body.byteLength }));
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    return this.objects.get(key)?.body;
  }

  async open(object: StoredObject): Promise<ArrayBuffer> {
    this.gets++;
    const current = this.objects.get(object.key);
    if (!current || current.etag !== object.etag) throw new Error(`PreconditionFailed: ${object.key} changed since it was listed`);
    const { body } = current;
    return body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer;
  }

  private write(key: string, operation: WriteOperation): void {
    if (this.failWrite(key, operation)) throw new Error(`injected failure: ${operation} ${key}`);
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    this.write(key, 'put');
    this.objects.set(key, { body: new Uint8Array(body), etag: `"${md5(body)}"` });
  }

  async createMultipartUpload(key: string): Promise<string> {
    this.write(key, 'createMultipartUpload');
    const uploadId = `upload-${this.nextUpload++}`;
    this.uploads.set(uploadId, { key, parts: new Map() });
    return uploadId;
  }

  private upload(key: string, uploadId: string) {
    const upload = this.uploads.get(uploadId);
    if (!upload || upload.key !== key) throw new Error(`NoSuchUpload: ${uploadId} for ${key}`);
    return upload;
  }

  async uploadPart(key: string, uploadId: string, partNumber: number, body: Uint8Array): Promise<UploadedPart> {
    this.write(key, 'uploadPart');
    const upload = this.upload(key, uploadId);
    if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > S3_MULTIPART.maxParts) throw new Error(`InvalidArgument: part number ${partNumber}`);
    if (body.byteLength > S3_MULTIPART.maxPartBytes) throw new Error(`EntityTooLarge: part ${partNumber}`);
    const etag = `"${md5(body)}"`;
    upload.parts.set(partNumber, { body: new Uint8Array(body), etag });
    return { partNumber, etag };
  }

  async completeMultipartUpload(key: string, uploadId: string, parts: readonly UploadedPart[]): Promise<void> {
    this.write(key, 'completeMultipartUpload');
    const upload = this.upload(key, uploadId);
    if (parts.length === 0) throw new Error('MalformedXML: no parts');
    const bodies = parts.map(({ partNumber, etag }, i) => {
      if (i > 0 && partNumber <= parts[i - 1]!.partNumber) throw new Error('InvalidPartOrder');
      const part = upload.parts.get(partNumber);
      if (!part || part.etag !== etag) throw new Error(`InvalidPart: ${partNumber}`);
      if (i < parts.length - 1 && part.body.byteLength < S3_MULTIPART.minPartBytes) throw new Error(`EntityTooSmall: part ${partNumber} of ${part.body.byteLength} bytes`);
      return part.body;
    });
    const etag = `"${createHash('md5').update(Buffer.concat(bodies.map((body) => Buffer.from(md5(body), 'hex')))).digest('hex')}-${bodies.length}"`;
    this.objects.set(key, { body: Buffer.concat(bodies), etag });
    this.uploads.delete(uploadId);
  }

  async abortMultipartUpload(key: string, uploadId: string): Promise<void> {
    if (this.abortFails) throw new Error(`injected failure: abortMultipartUpload ${key}`);
    this.upload(key, uploadId);
    this.uploads.delete(uploadId);
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (const key of keys) this.objects.delete(key);
  }

  keys(prefix = ''): string[] {
    return [...this.objects.keys()].filter((key) => key.startsWith(prefix)).sort();
  }

  /** A copy of the objects (not the uploads), with nothing set to fail. */
  copy(): MemoryBucket {
    const copy = new MemoryBucket();
    for (const [key, object] of this.objects) copy.objects.set(key, object);
    return copy;
  }
}
