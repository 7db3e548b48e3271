import type { StoredObject, UploadedPart } from '../../lambda/lake/ports.js';
import { MemoryBucket } from '../../devkit/fakes/memory-bucket.js';

/** Who is calling S3, so that each request is billed to the line it belongs to. */
export type Caller = 'landing' | 'planner' | 'worker';

/** S3 requests by price class (https://aws.amazon.com/s3/pricing/): PUT, COPY, POST and LIST cost the same; GET less; DELETE nothing. */
export interface RequestCounts {
  put: number;
  get: number;
  list: number;
  delete: number;
}

/** S3 answers a listing in pages of at most 1,000 keys (ListObjectsV2 `MaxKeys`). */
const KEYS_PER_LIST_PAGE = 1000;

const zero = (): RequestCounts => ({ put: 0, get: 0, list: 0, delete: 0 });

/**
 * The in-memory bucket of the compaction tests (S3's semantics where compaction relies on them), counting every
 * request as S3 would bill it, per caller: a PUT per object, per CreateMultipartUpload, UploadPart and
 * CompleteMultipartUpload; a GET per object read (objects here stay below the 32 MiB at which the S3 adapter
 * switches to ranged reads); a LIST per page of 1,000 keys (at least one per listing).
 */
export class CountingBucket extends MemoryBucket {
  caller: Caller = 'landing';
  readonly requests: Record<Caller, RequestCounts> = { landing: zero(), planner: zero(), worker: zero() };
  /** Bytes written by each caller (PUT bodies and parts). */
  readonly bytesWritten: Record<Caller, number> = { landing: 0, planner: 0, worker: 0 };

  private count(kind: keyof RequestCounts, n = 1): void {
    this.requests[this.caller][kind] += n;
  }

  override async put(key: string, body: Uint8Array): Promise<void> {
    this.count('put');
    this.bytesWritten[this.caller] += body.byteLength;
    await super.put(key, body);
  }

  override async createMultipartUpload(key: string): Promise<string> {
    this.count('put');
    return super.createMultipartUpload(key);
  }

  override async uploadPart(key: string, uploadId: string, partNumber: number, body: Uint8Array): Promise<UploadedPart> {
    this.count('put');
    this.bytesWritten[this.caller] += body.byteLength;
    return super.uploadPart(key, uploadId, partNumber, body);
  }

  override async completeMultipartUpload(key: string, uploadId: string, parts: readonly UploadedPart[]): Promise<void> {
    this.count('put');
    await super.completeMultipartUpload(key, uploadId, parts);
  }

  override async list(prefix: string): Promise<StoredObject[]> {
    const objects = await super.list(prefix);
    this.count('list', Math.max(1, Math.ceil(objects.length / KEYS_PER_LIST_PAGE)));
    return objects;
  }

  override async get(key: string): Promise<Uint8Array | undefined> {
    this.count('get');
    return super.get(key);
  }

  override async open(object: StoredObject): Promise<ArrayBuffer> {
    this.count('get');
    return super.open(object);
  }

  override async getObject(bucket: string, key: string): Promise<Uint8Array> {
    this.count('get');
    return super.getObject(bucket, key);
  }

  override async delete(keys: readonly string[]): Promise<void> {
    this.count('delete', Math.ceil(keys.length / KEYS_PER_LIST_PAGE));
    await super.delete(keys);
  }

  /** Organizations with raw objects, as the deployed planner's delimiter listing finds them: one LIST page per 1,000 per dataset. */
  organizations(): { list: () => Promise<string[]> } {
    return {
      list: async () => {
        const orgs = new Set<string>();
        for (const key of this.objects.keys()) {
          const match = /^(?:traces|spans)\/org_id=([^/]+)\//.exec(key);
          if (match) orgs.add(match[1]!);
        }
        this.count('list', 2 * Math.max(1, Math.ceil(orgs.size / KEYS_PER_LIST_PAGE)));
        return [...orgs].sort();
      },
    };
  }
}
