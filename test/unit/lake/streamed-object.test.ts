import { S3_MULTIPART, streamedObject } from '../../../lambda/lake/lifecycle/streamed-object.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';

const MIB = 1024 * 1024;
const bytes = (n: number, fill: number) => new Uint8Array(n).fill(fill);

describe('streamedObject', () => {
  it('writes an object that ends below one part as a single PUT, visible only at the end', async () => {
    const bucket = new MemoryBucket();
    const operations: string[] = [];
    bucket.failWrite = (_key, operation) => (operations.push(operation), false);
    const object = streamedObject(bucket, 'compacted/a.parquet', 'application/vnd.apache.parquet');

    await object.write(bytes(3 * MIB, 1));
    expect(bucket.keys()).toEqual([]);
    await object.end(bytes(10, 2));

    expect(operations).toEqual(['put']);
    expect(object.partsUploaded).toBe(0);
    expect(bucket.objects.get('compacted/a.parquet')!.body.byteLength).toBe(3 * MIB + 10);
  });

  it('uploads a part each time the part size has gathered, the rest as the last part, in order', async () => {
    const bucket = new MemoryBucket();
    const object = streamedObject(bucket, 'compacted/b.parquet', 'application/vnd.apache.parquet', S3_MULTIPART.minPartBytes);
    for (let piece = 0; piece < 6; piece++) await object.write(bytes(2 * MIB, piece));
    expect(object.partsUploaded).toBe(2);
    expect(bucket.uploads.size).toBe(1);
    expect(bucket.keys()).toEqual([]);

    await object.end(bytes(1, 9));

    const { body, etag } = bucket.objects.get('compacted/b.parquet')!;
    expect(body.byteLength).toBe(12 * MIB + 1);
    expect([0, 2, 4, 6, 8, 10].map((mib) => body[mib * MIB])).toEqual([0, 1, 2, 3, 4, 5]);
    expect(body.at(-1)).toBe(9);
    expect(etag).toMatch(/-3"$/);
    expect(bucket.uploads.size).toBe(0);
    await expect(object.write(bytes(1, 0))).rejects.toThrow('written after it was ended');
  });

  it('aborts a started upload, and has nothing to abort before the first part', async () => {
    const bucket = new MemoryBucket();
    const small = streamedObject(bucket, 'compacted/c.parquet', 'x');
    await small.write(bytes(10, 1));
    await small.abort();
    const large = streamedObject(bucket, 'compacted/d.parquet', 'x', S3_MULTIPART.minPartBytes);
    await large.write(bytes(6 * MIB, 1));
    expect(bucket.uploads.size).toBe(1);

    await large.abort();

    expect(bucket.uploads.size).toBe(0);
    expect(bucket.keys()).toEqual([]);
    await expect(large.end(bytes(1, 1))).rejects.toThrow('written after it was aborted');
  });

  it('refuses part sizes S3 does not accept', () => {
    const bucket = new MemoryBucket();
    expect(() => streamedObject(bucket, 'k', 'x', S3_MULTIPART.minPartBytes - 1)).toThrow(RangeError);
    expect(() => streamedObject(bucket, 'k', 'x', S3_MULTIPART.maxPartBytes + 1)).toThrow(RangeError);
  });
});
