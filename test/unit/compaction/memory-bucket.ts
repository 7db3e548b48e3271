import { createHash } from 'node:crypto';
import type { CompactionStore, StoredObject } from '../../../lambda/compaction/compact-slice.js';
import { type LandingStore, ReferencedObjectNotFoundError } from '../../../lambda/landing/ports.js';

/**
 * One in-memory bucket behind both ports, with S3's semantics where compaction relies on them: a PUT replaces
 * an object whole, the ETag is the MD5 of the content, a read pinned to an ETag fails once the object changed.
 * `failPut` makes chosen PUTs fail (a crash at that point).
 */
export class MemoryBucket implements LandingStore, CompactionStore {
  readonly objects = new Map<string, { body: Uint8Array; etag: string }>();
  failPut: (key: string) => boolean = () => false;
  gets = 0;

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

  async put(key: string, body: Uint8Array): Promise<void> {
    if (this.failPut(key)) throw new Error(`injected failure writing ${key}`);
    this.objects.set(key, { body: new Uint8Array(body), etag: `"${createHash('md5').update(body).digest('hex')}"` });
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (const key of keys) this.objects.delete(key);
  }

  keys(prefix = ''): string[] {
    return [...this.objects.keys()].filter((key) => key.startsWith(prefix)).sort();
  }
}
