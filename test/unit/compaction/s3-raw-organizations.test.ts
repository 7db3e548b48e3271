import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { S3RawOrganizations } from '../../../lambda/compaction/s3-raw-organizations.js';

describe('S3RawOrganizations', () => {
  const s3 = mockClient(S3Client);
  beforeEach(() => s3.reset());

  it('finds the organizations of both raw prefixes by delimiter listings, page by page', async () => {
    s3.on(ListObjectsV2Command, { Prefix: 'traces/', ContinuationToken: undefined })
      .resolves({ CommonPrefixes: [{ Prefix: 'traces/org_id=org-a/' }, { Prefix: 'traces/org_id=org-b/' }], IsTruncated: true, NextContinuationToken: 't1' })
      .on(ListObjectsV2Command, { Prefix: 'traces/', ContinuationToken: 't1' })
      .resolves({ CommonPrefixes: [{ Prefix: 'traces/org_id=org-c/' }, { Prefix: 'traces/not-a-partition/' }] })
      .on(ListObjectsV2Command, { Prefix: 'spans/' })
      .resolves({ CommonPrefixes: [{ Prefix: 'spans/org_id=org-a/' }, { Prefix: 'spans/org_id=org-d/' }] });

    expect(await new S3RawOrganizations(new S3Client({ region: 'eu-west-1' }), 'data').list()).toEqual(['org-a', 'org-b', 'org-c', 'org-d']);
    expect(s3).toHaveReceivedCommandTimes(ListObjectsV2Command, 3);
    expect(s3).toHaveReceivedCommandWith(ListObjectsV2Command, { Bucket: 'data', Prefix: 'spans/', Delimiter: '/' });
  });
});
