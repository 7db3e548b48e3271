/**
 * The part of s3rver 3.7.1's `FilesystemStore` this adapter relies on (internal API, pinned by
 * test/integration/s3rver-listing.test.ts).
 */
export interface S3rverListingStore {
  listObjects(
    bucket: string,
    options: { delimiter?: string; prefix?: string; startAfter?: string; maxKeys?: number },
  ): Promise<{ objects: { key: string }[]; commonPrefixes: string[]; isTruncated: boolean }>;
}

/**
 * Makes s3rver answer a delimiter listing as S3 does. s3rver 3.7.1 prunes every directory below a
 * would-be common prefix before it has seen an object there, so `Delimiter: '/'` over
 * `traces/org_id=…/dt=…/hour=…/x.parquet` returns no common prefix at all, where S3 returns one per
 * organization (https://docs.aws.amazon.com/AmazonS3/latest/userguide/using-prefixes.html). The listing
 * is made without the delimiter and folded into common prefixes here, all in one page: s3rver's router
 * builds the continuation token from the last key, which a page ending on a common prefix has not got,
 * so `MaxKeys` is not applied to a delimiter listing (a local bucket never holds 1,000 organizations).
 */
export function listWithDelimiterAsS3Does(store: S3rverListingStore): void {
  const list = store.listObjects.bind(store);
  store.listObjects = async (bucket, options) => {
    const { delimiter = '', prefix = '', startAfter = '' } = options;
    if (delimiter === '') return list(bucket, options);
    const all = await list(bucket, { prefix, startAfter: '', maxKeys: Infinity });
    const objects: { key: string }[] = [];
    const commonPrefixes: string[] = [];
    for (const object of all.objects) {
      const at = object.key.indexOf(delimiter, prefix.length);
      const common = at === -1 ? undefined : object.key.slice(0, at + delimiter.length);
      const entry = common ?? object.key;
      if (entry <= startAfter || (common !== undefined && commonPrefixes.at(-1) === common)) continue;
      if (common === undefined) objects.push(object);
      else commonPrefixes.push(common);
    }
    return { objects, commonPrefixes, isTruncated: false };
  };
}
