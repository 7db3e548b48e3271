import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/**
 * The part of s3rver 3.7.1's `FilesystemStore` this adapter relies on (internal API, pinned by
 * test/integration/engines.test.ts › s3rver writes objects atomically).
 */
export interface S3rverFilesystemStore {
  getResourcePath(bucket: string, key: string, resource: 'object'): string;
  putMetadata(bucket: string, key: string, metadata: unknown, md5: string): Promise<void>;
  putObject(object: { bucket: string; key: string; metadata: unknown; content: Buffer | Readable }): Promise<{ size: number; md5: string }>;
}

/** Suffix of an object file still being written; no reader globs it and s3rver never lists it. */
export const PARTIAL_OBJECT_MARKER = '.partial-';

/**
 * Makes s3rver write each object to a temporary file and rename it into place once complete, and
 * answer PutObject only then. s3rver 3.7.1 writes straight to the object's file and answers before
 * the write finishes, so a reader of its directory (`npm run query`) could see half a Parquet file
 * ("No magic bytes"), and a kill left one behind for good.
 */
export function writeObjectsAtomically(store: S3rverFilesystemStore): void {
  store.putObject = async (object) => {
    const objectPath = store.getResourcePath(object.bucket, object.key, 'object');
    const partialPath = `${objectPath}${PARTIAL_OBJECT_MARKER}${randomBytes(6).toString('hex')}`;
    await mkdir(path.dirname(objectPath), { recursive: true });
    const md5 = createHash('md5');
    let size = 0;
    const measure = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        md5.update(chunk);
        size += chunk.length;
        callback(null, chunk);
      },
    });
    const content = Buffer.isBuffer(object.content) ? [object.content] : object.content;
    try {
      await pipeline(content, measure, createWriteStream(partialPath));
      await rename(partialPath, objectPath);
    } catch (error) {
      await rm(partialPath, { force: true });
      throw error;
    }
    const digest = md5.digest('hex');
    await store.putMetadata(object.bucket, object.key, object.metadata, digest);
    return { size, md5: digest };
  };
}
