import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { S3Client } from '@aws-sdk/client-s3';
import { DynamoDbIdempotencyStore } from '../shared/adapters/dynamodb-idempotency-store.js';
import { DynamoDbRateLimiter } from '../shared/adapters/dynamodb-rate-limiter.js';
import { LeasingRateLimiter } from '../shared/adapters/leasing-rate-limiter.js';
import { DynamoDbTenancyStore } from '../shared/adapters/dynamodb-tenancy-store.js';
import { KinesisTraceSink } from '../shared/adapters/kinesis-trace-sink.js';
import { S3OverflowStore } from '../shared/adapters/s3-overflow-store.js';
import { ENV, requireEnv } from '../shared/runtime/env-names.js';
import { createIngestHandler } from './create-handler.js';
import { CachedTenancyReader, DEFAULT_TENANCY_CACHE } from './tenancy-cache.js';

// Composition root: configuration is read and clients are created once per container.
const tenancyTable = requireEnv(ENV.tenancyTable);
const rateTable = requireEnv(ENV.rateTable);
const traceStream = requireEnv(ENV.traceStream);
const dataBucket = requireEnv(ENV.dataBucket);
const cacheSeconds = Number(process.env[ENV.keyCacheSeconds] ?? DEFAULT_TENANCY_CACHE.ttlMs / 1000);

// A call that hangs fails fast and is retried instead of running the function into its timeout
// (without throwOnRequestTimeout the SDK only warns). Kinesis is retried by KinesisTraceSink alone
// (6 attempts, backoff under 1 s): 6 × 3 s stays inside the 25 s function timeout.
const timeouts = { connectionTimeout: 1_000, throwOnRequestTimeout: true };
const dynamodb = new DynamoDBClient({ maxAttempts: 3, requestHandler: { ...timeouts, requestTimeout: 2_000 } });
const kinesis = new KinesisClient({ maxAttempts: 1, requestHandler: { ...timeouts, requestTimeout: 3_000 } });
const s3 = new S3Client({
  maxAttempts: 3,
  requestHandler: { ...timeouts, requestTimeout: 5_000 },
  forcePathStyle: process.env[ENV.s3ForcePathStyle] === 'true',
});

export const handler = createIngestHandler({
  deps: {
    tenancy: new CachedTenancyReader(new DynamoDbTenancyStore(dynamodb, tenancyTable), {
      ...DEFAULT_TENANCY_CACHE,
      ttlMs: Number.isFinite(cacheSeconds) && cacheSeconds >= 0 ? cacheSeconds * 1000 : DEFAULT_TENANCY_CACHE.ttlMs,
    }),
    rateLimiter: new LeasingRateLimiter(new DynamoDbRateLimiter(dynamodb, rateTable)),
    sink: new KinesisTraceSink(kinesis, traceStream),
    overflow: new S3OverflowStore(s3, dataBucket),
    idempotency: new DynamoDbIdempotencyStore(dynamodb, rateTable),
    newId: randomUUID,
  },
  logger: new Logger({ serviceName: 'trace-ingest' }),
  metrics: new Metrics({ namespace: 'TraceIngest', serviceName: 'trace-ingest' }),
});
