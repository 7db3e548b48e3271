import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { S3Client } from '@aws-sdk/client-s3';
import { DynamoDbIdempotencyStore } from './adapters/idempotency/dynamodb-idempotency-store.js';
import { DEFAULT_RATE_BACKOFF, DynamoDbRateLimiter } from './adapters/rate/dynamodb-rate-limiter.js';
import { LeasingRateLimiter } from './core/rate/leasing-rate-limiter.js';
import { DynamoDbTenancyReader } from '../tenancy-store/dynamodb-tenancy-reader.js';
import { DynamoDbWindowUsage } from './adapters/rate/dynamodb-window-usage.js';
import { DEFAULT_PUBLISH_BACKOFF, KinesisTraceSink, PUT_RECORDS_MAX_BYTES, PUT_RECORDS_MAX_COUNT, sizedCallTimeoutMs } from './adapters/publish/kinesis-trace-sink.js';
import { S3OverflowStore } from './adapters/publish/s3-overflow-store.js';
import type { BackoffPolicy, Sleep } from '../shared/runtime/backoff.js';
import { ENV, requireEnv } from '../shared/runtime/env-names.js';
import { createIngestHandler } from './create-ingest-handler.js';
import type { IngestDeps } from './core/ports.js';
import { CachedTenancyReader, DEFAULT_TENANCY_CACHE, type TenancyCacheOptions } from './core/tenancy/tenancy-cache.js';
import { ThrottledWindowUsage } from './core/rate/window-usage-cache.js';
import { METRICS_NAMESPACE, SERVICE_NAMES } from '../shared/service-constants.js';

/** The AWS resources the ingest function uses. */
export interface IngestResources {
  tenancyTable: string;
  rateTable: string;
  traceStream: string;
  dataBucket: string;
}

/** Everything that varies between the deployed function, the local stack, the bench and the tests. */
export interface IngestConfig {
  /** Needed for every port not given in `ports`. */
  resources?: Partial<IngestResources>;
  /** Clients to use instead of the default ones (built with the deployed timeouts). */
  clients?: { dynamodb?: DynamoDBClient; kinesis?: KinesisClient; s3?: S3Client };
  /** Ports to use instead of the adapters built from `resources`: fakes, wrappers, failing doubles. */
  ports?: Partial<Omit<IngestDeps, 'logger'>>;
  /** Tenancy lookups cached in a warm container (the default), or read every time (`false`). */
  tenancyCache?: TenancyCacheOptions | false;
  /** Honour the Idempotency-Key header (default true). */
  idempotency?: boolean;
  /**
   * Quota leases for organizations whose rate-window transactions meet contention (the deployed
   * handler turns them on); off, every batch runs its own transaction exactly as before.
   */
  rateLeases?: boolean;
  /** Backoff of the rate-window transaction and of PutRecords; `sleep` replaced in tests. */
  retries?: { rateWindows?: BackoffPolicy; publish?: BackoffPolicy; sleep?: Sleep };
  logger?: Logger;
  metrics?: Metrics;
  /** Microseconds since the epoch; injectable so tests can pin the clock. */
  nowMicros?: () => number;
}

// A call that hangs fails fast and is retried instead of running the function into its timeout
// (without throwOnRequestTimeout the SDK only warns). Kinesis is retried by KinesisTraceSink alone, which
// gives each PutRecords call its own timeout, sized to the records it carries and to the time left before
// the request's deadline (`callTimeoutMs`); the client's timeout below is only the fallback of a call sent
// without one, the time a full 500-record, 5 MiB call is given.
const FAIL_FAST = { connectionTimeout: 1_000, throwOnRequestTimeout: true };

/** The clients of the deployed function; `dynamodbAt` (endpoint, region, credentials) points DynamoDB's elsewhere, for tests. */
export function defaultIngestClients(s3ForcePathStyle = false, dynamodbAt: Pick<DynamoDBClientConfig, 'endpoint' | 'region' | 'credentials'> = {}) {
  return {
    dynamodb: new DynamoDBClient({ ...dynamodbAt, maxAttempts: 3, requestHandler: { ...FAIL_FAST, requestTimeout: 2_000 } }),
    kinesis: new KinesisClient({ maxAttempts: 1, requestHandler: { ...FAIL_FAST, requestTimeout: sizedCallTimeoutMs(PUT_RECORDS_MAX_COUNT, PUT_RECORDS_MAX_BYTES) } }),
    s3: new S3Client({ maxAttempts: 3, requestHandler: { ...FAIL_FAST, requestTimeout: 5_000 }, forcePathStyle: s3ForcePathStyle }),
  };
}

/** The configuration of the deployed function, read from its environment once at cold start. */
export function ingestConfigFromEnv(env: NodeJS.ProcessEnv = process.env): IngestConfig {
  const cacheSeconds = Number(env[ENV.keyCacheSeconds] ?? DEFAULT_TENANCY_CACHE.ttlMs / 1000);
  return {
    resources: {
      tenancyTable: requireEnv(ENV.tenancyTable, env),
      rateTable: requireEnv(ENV.rateTable, env),
      traceStream: requireEnv(ENV.traceStream, env),
      dataBucket: requireEnv(ENV.dataBucket, env),
    },
    clients: defaultIngestClients(env[ENV.s3ForcePathStyle] === 'true'),
    rateLeases: true,
    tenancyCache: {
      ...DEFAULT_TENANCY_CACHE,
      ttlMs: Number.isFinite(cacheSeconds) && cacheSeconds >= 0 ? cacheSeconds * 1000 : DEFAULT_TENANCY_CACHE.ttlMs,
    },
  };
}

/** The ports of the use case: the ones given, and adapters over AWS for the rest. */
export function ingestPorts(config: IngestConfig): Omit<IngestDeps, 'logger'> {
  const given = config.ports ?? {};
  let defaults: ReturnType<typeof defaultIngestClients> | undefined;
  const client = <K extends 'dynamodb' | 'kinesis' | 's3'>(name: K) =>
    config.clients?.[name] ?? (defaults ??= defaultIngestClients())[name];
  const resource = (name: keyof IngestResources): string => {
    const value = config.resources?.[name];
    if (value === undefined) throw new Error(`composeIngest: resources.${name} is needed for the ports not given`);
    return value;
  };
  const retries = config.retries ?? {};
  const tenancy = () => {
    const store = new DynamoDbTenancyReader(client('dynamodb'), resource('tenancyTable'));
    return config.tenancyCache === false ? store : new CachedTenancyReader(store, config.tenancyCache ?? DEFAULT_TENANCY_CACHE);
  };
  // Per-request transactions, and quota leases once an organization's transactions meet contention.
  const rateLimiter = (exact: DynamoDbRateLimiter) => (config.rateLeases ? new LeasingRateLimiter(exact) : exact);
  return {
    tenancy: given.tenancy ?? tenancy(),
    rateLimiter:
      given.rateLimiter ??
      rateLimiter(new DynamoDbRateLimiter(client('dynamodb'), resource('rateTable'), retries.rateWindows ?? DEFAULT_RATE_BACKOFF, retries.sleep)),
    sink: given.sink ?? new KinesisTraceSink(client('kinesis'), resource('traceStream'), retries.publish ?? DEFAULT_PUBLISH_BACKOFF, retries.sleep),
    overflow: given.overflow ?? new S3OverflowStore(client('s3'), resource('dataBucket')),
    // Without a rate table (a given rate limiter), answers carry RateLimit-Policy but not RateLimit.
    windowUsage:
      given.windowUsage ??
      (config.resources?.rateTable ? new ThrottledWindowUsage(new DynamoDbWindowUsage(client('dynamodb'), config.resources.rateTable)) : undefined),
    idempotency:
      config.idempotency === false ? undefined : (given.idempotency ?? new DynamoDbIdempotencyStore(client('dynamodb'), resource('rateTable'))),
    newId: given.newId ?? randomUUID,
  };
}

/**
 * The one composition root of the ingest function: ports, logger, metrics and the middleware
 * chain. The deployed handler, the local stack, the bench and the tests all build it here.
 */
export function composeIngest(config: IngestConfig) {
  return createIngestHandler({
    deps: ingestPorts(config),
    logger: config.logger ?? new Logger({ serviceName: SERVICE_NAMES.ingest }),
    metrics: config.metrics ?? new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAMES.ingest }),
    nowMicros: config.nowMicros,
  });
}
