import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The parts of s3rver 3.7.1 this adapter relies on (internal API, pinned by
 * test/integration/engines.test.ts › s3rver pages a listing).
 */
export interface S3rverListingInternals {
  /** Koa's middleware stack; the last entry is `@koa/router`'s dispatcher, which carries `router`. */
  middleware: KoaMiddleware[];
  store: { listObjects(bucket: string, options: Record<string, unknown>): Promise<ListedObjects> };
}

interface ListedObjects {
  objects: { key: string }[];
  isTruncated: boolean;
}

interface KoaContext {
  path: string;
  status: number;
  query: Record<string, string | string[] | undefined>;
  body: unknown;
}
type KoaMiddleware = ((ctx: KoaContext, next: () => Promise<void>) => Promise<void>) & { router?: unknown };

interface ListBucketResult {
  StartAfter?: string;
  ContinuationToken?: string;
  NextContinuationToken?: string;
  IsTruncated?: boolean;
}

const TOKEN_VERSION = 'v1';

/** The token for a listing of `bucket` that goes on after `key`: opaque to callers, as S3's is. */
export function encodeContinuationToken(bucket: string, key: string): string {
  return Buffer.from(JSON.stringify([TOKEN_VERSION, bucket, key]), 'utf8').toString('base64url');
}

/** The key a token of `bucket` goes on after, or undefined for anything this server did not issue for it. */
export function decodeContinuationToken(bucket: string, token: string): string | undefined {
  try {
    const decoded: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (!Array.isArray(decoded) || decoded.length !== 3) return undefined;
    const [version, tokenBucket, key] = decoded as unknown[];
    return version === TOKEN_VERSION && tokenBucket === bucket && typeof key === 'string' ? key : undefined;
  } catch {
    return undefined;
  }
}

interface TruncatedListing {
  lastKey?: string;
}

/**
 * Gives s3rver ListObjectsV2 continuation tokens that work on Node 17 and later. s3rver 3.7.1 (and its fork
 * `@20minutes/s3rver` 5.0.0) encrypt them with DES, which OpenSSL 3 offers only with the legacy provider, so
 * every listing of more than one page (1,000 keys) answered 500 InternalError and compaction stopped.
 *
 * A middleware just before s3rver's router turns a token of ours into `start-after` on the way in, and on the
 * way out writes the token and the truncation that the wrapped store saw but kept from s3rver's controller
 * (which would otherwise call its DES encoder). S3 documents the token as obfuscated, not as a key
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html), and answers a token it did not
 * issue with 400 InvalidArgument; so do we.
 */
export function encodeContinuationTokensPortably(s3rver: S3rverListingInternals): void {
  const listing = new AsyncLocalStorage<TruncatedListing>();
  const store = s3rver.store;
  const listObjects = store.listObjects.bind(store);
  store.listObjects = async (bucket, options) => {
    const result = await listObjects(bucket, options);
    const truncation = listing.getStore();
    if (!truncation || !result.isTruncated) return result;
    truncation.lastKey = result.objects.at(-1)?.key;
    return { ...result, isTruncated: false };
  };

  const tokens: KoaMiddleware = async (ctx, next) => {
    const query = ctx.query;
    if (query['list-type'] !== '2') return next();
    const token = typeof query['continuation-token'] === 'string' && query['continuation-token'] !== '' ? query['continuation-token'] : undefined;
    const bucket = bucketOfPath(ctx);
    const requestedStartAfter = query['start-after'];
    if (token !== undefined) {
      const startAfter = decodeContinuationToken(bucket, token);
      if (startAfter === undefined) {
        // s3rver's outer middleware writes a plain object as XML: S3's error document.
        ctx.status = 400;
        ctx.body = { Error: { Code: 'InvalidArgument', Message: 'The continuation token provided is incorrect', ArgumentName: 'continuation-token', ArgumentValue: token } };
        return;
      }
      const { 'continuation-token': _omitted, ...rest } = query;
      ctx.query = { ...rest, 'start-after': startAfter };
    }
    const truncation: TruncatedListing = {};
    await listing.run(truncation, next);
    const result = (ctx.body as { ListBucketResult?: ListBucketResult } | undefined)?.ListBucketResult;
    if (!result) return;
    if (token !== undefined) {
      result.ContinuationToken = token;
      result.StartAfter = typeof requestedStartAfter === 'string' ? requestedStartAfter : undefined;
    }
    if (truncation.lastKey !== undefined) {
      result.IsTruncated = true;
      result.NextContinuationToken = encodeContinuationToken(bucket, truncation.lastKey);
    }
  };

  const routerAt = s3rver.middleware.findIndex((middleware) => middleware.router !== undefined);
  if (routerAt < 0) throw new Error("s3rver's router middleware not found: the continuation-token codec cannot be installed");
  s3rver.middleware.splice(routerAt, 0, tokens);
}

/** The bucket of the request: s3rver's vhost middleware, which runs before this one, has made every path `/<bucket>/…`. */
function bucketOfPath(ctx: KoaContext): string {
  return decodeURIComponent(ctx.path.split('/')[1] ?? '');
}
