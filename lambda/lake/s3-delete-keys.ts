import { DeleteObjectsCommand, type S3Client } from '@aws-sdk/client-s3';

/** Deletes keys, 1,000 per DeleteObjects (S3's most); a key S3 could not delete fails the call, naming it. */
export async function deleteKeys(client: S3Client, bucket: string, keys: readonly string[]): Promise<void> {
  for (let start = 0; start < keys.length; start += 1000) {
    const batch = keys.slice(start, start + 1000);
    const response = await client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }));
    if (response.Errors && response.Errors.length > 0) throw new Error(`could not delete ${response.Errors.map((e) => `${e.Key}: ${e.Code}`).join(', ')}`);
  }
}
