import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { useEngineSuite } from '../support/engine-suite.js';

const BUCKET = 'listing';
const suite = useEngineSuite({ bucket: BUCKET });

describe('s3rver answers a delimiter listing as S3 does', () => {
  beforeAll(async () => {
    for (const key of ['traces/org_id=a/dt=2026-11-25/hour=01/x.parquet', 'traces/org_id=a/dt=2026-11-25/hour=02/y.parquet', 'traces/org_id=b/dt=2026-11-25/hour=01/z.parquet', 'traces/top.json']) {
      await suite.s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: 'x' }));
    }
  });

  it('returns one common prefix per organization however deep its objects lie, and the keys at the prefix level', async () => {
    const page = await suite.s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'traces/', Delimiter: '/' }));
    expect(page.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['traces/org_id=a/', 'traces/org_id=b/']);
    expect(page.Contents?.map((o) => o.Key)).toEqual(['traces/top.json']);
  });

  it('starts after the common prefix a continuation names', async () => {
    const page = await suite.s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'traces/', Delimiter: '/', StartAfter: 'traces/org_id=a/' }));
    expect(page.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['traces/org_id=b/']);
  });
});
