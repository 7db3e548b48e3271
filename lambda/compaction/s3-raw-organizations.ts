import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { RawOrganizations } from './compact-pending.js';

const ORG_PARTITION = /^(?:traces|spans)\/org_id=([^/]+)\/$/;

/**
 * Adapter: the organizations with raw objects, from a delimiter listing of each raw prefix (one entry per
 * organization, not per object). S3 answers it; s3rver's delimiter listing returns nothing for keys with `=`,
 * so the local stack lists whole prefixes instead.
 */
export class S3RawOrganizations implements RawOrganizations {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  async list(): Promise<string[]> {
    const organizations = new Set<string>();
    for (const prefix of ['traces/', 'spans/']) {
      let ContinuationToken: string | undefined;
      do {
        const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, Delimiter: '/', ContinuationToken }));
        for (const common of page.CommonPrefixes ?? []) {
          const match = ORG_PARTITION.exec(common.Prefix ?? '');
          if (match) organizations.add(match[1]!);
        }
        ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (ContinuationToken);
    }
    return [...organizations].sort();
  }
}
