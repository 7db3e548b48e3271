import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { composeLanding } from '../../../lambda/landing/compose.js';
import { quietTelemetry } from '../../../devkit/fakes/quiet-telemetry.js';
import { SHARD, acceptedTrace, inlineRecord, kinesisEvent, sequenceNumber } from '../../../devkit/builders/landing-builders.js';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';
const s3Mock = mockClient(S3Client);
const handler = composeLanding({ dataBucket: 'data-bucket', s3: new S3Client({ region: 'us-east-1' }), ...quietTelemetry() });

beforeEach(() => s3Mock.reset());

describe('landing handler', () => {
  it('lands a Kinesis event and returns nothing (no partial batch responses)', async () => {
    s3Mock.on(PutObjectCommand).resolves({});

    await expect(handler(kinesisEvent([inlineRecord(1, acceptedTrace()), inlineRecord(2, acceptedTrace())]))).resolves.toBeUndefined();

    expect(s3Mock).toHaveReceivedCommandWith(PutObjectCommand, { Bucket: 'data-bucket', Key: `traces/org_id=org-a/dt=2026-11-22/hour=10/${SHARD}-${sequenceNumber(1)}.parquet` });
    expect(s3Mock).toHaveReceivedCommandTimes(PutObjectCommand, 2);
  });

  it('throws when a write fails, so the event source mapping retries or bisects the whole batch', async () => {
    s3Mock.on(PutObjectCommand).rejects(new Error('InternalError'));

    await expect(handler(kinesisEvent([inlineRecord(1, acceptedTrace())]))).rejects.toThrow('2 of 2 objects were not written');
  });
});
