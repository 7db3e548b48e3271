import { AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, S3Client, UploadPartCommand } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { S3LakeStore } from '../../../lambda/lake/s3-lake-store.js';

const s3Mock = mockClient(S3Client);
const store = () => new S3LakeStore(new S3Client({ region: 'us-east-1' }), 'data-bucket');

describe('S3LakeStore multipart upload', () => {
  beforeEach(() => s3Mock.reset());

  it('states CRC32 on the upload and each part, and names every part with its ETag and checksum at completion', async () => {
    s3Mock.on(CreateMultipartUploadCommand).resolves({ UploadId: 'u-1' });
    s3Mock.on(UploadPartCommand, { PartNumber: 1 }).resolves({ ETag: '"e1"', ChecksumCRC32: 'c1==' });
    s3Mock.on(UploadPartCommand, { PartNumber: 2 }).resolves({ ETag: '"e2"', ChecksumCRC32: 'c2==' });
    s3Mock.on(CompleteMultipartUploadCommand).resolves({});
    const s3 = store();

    const uploadId = await s3.createMultipartUpload('compacted/k.parquet', 'application/vnd.apache.parquet');
    const parts = [await s3.uploadPart('compacted/k.parquet', uploadId, 1, new Uint8Array(3)), await s3.uploadPart('compacted/k.parquet', uploadId, 2, new Uint8Array(1))];
    await s3.completeMultipartUpload('compacted/k.parquet', uploadId, parts);

    expect(s3Mock.commandCalls(CreateMultipartUploadCommand)[0]!.args[0].input).toEqual({
      Bucket: 'data-bucket',
      Key: 'compacted/k.parquet',
      ContentType: 'application/vnd.apache.parquet',
      ChecksumAlgorithm: 'CRC32',
    });
    expect(s3Mock.commandCalls(UploadPartCommand).map((call) => [call.args[0].input.PartNumber, call.args[0].input.ChecksumAlgorithm, call.args[0].input.ContentLength])).toEqual([
      [1, 'CRC32', 3],
      [2, 'CRC32', 1],
    ]);
    expect(s3Mock.commandCalls(CompleteMultipartUploadCommand)[0]!.args[0].input).toEqual({
      Bucket: 'data-bucket',
      Key: 'compacted/k.parquet',
      UploadId: 'u-1',
      MultipartUpload: { Parts: [{ PartNumber: 1, ETag: '"e1"', ChecksumCRC32: 'c1==' }, { PartNumber: 2, ETag: '"e2"', ChecksumCRC32: 'c2==' }] },
    });
  });

  it('aborts by key and upload id, and refuses an upload or a part S3 gave no id or ETag for', async () => {
    s3Mock.on(AbortMultipartUploadCommand).resolves({});
    s3Mock.on(CreateMultipartUploadCommand).resolves({});
    s3Mock.on(UploadPartCommand).resolves({});
    const s3 = store();

    await s3.abortMultipartUpload('compacted/k.parquet', 'u-9');

    expect(s3Mock.commandCalls(AbortMultipartUploadCommand)[0]!.args[0].input).toEqual({ Bucket: 'data-bucket', Key: 'compacted/k.parquet', UploadId: 'u-9' });
    await expect(s3.createMultipartUpload('compacted/k.parquet', 'x')).rejects.toThrow('no upload id');
    await expect(s3.uploadPart('compacted/k.parquet', 'u-9', 1, new Uint8Array(1))).rejects.toThrow('no ETag');
  });
});
