import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { S3Client } from '@aws-sdk/client-s3';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbErasureSecret } from '../erasure/dynamodb-erasure-secret.js';
import { type ErasureSecret, StoredErasures } from '../erasure/stored-erasures.js';
import { SQSClient } from '@aws-sdk/client-sqs';
import { ENV, requireEnv } from '../shared/runtime/env-names.js';
import { COMPACTION_QUEUE_VISIBILITY_SECONDS, METRICS_NAMESPACE, SERVICE_NAMES } from '../shared/service-constants.js';
import type { PendingOptions } from './compact-pending.js';
import type { LakeStore } from '../lake/ports.js';
import { createPlannerHandler } from './create-planner-handler.js';
import { type SliceRetries, createWorkerHandler } from './create-worker-handler.js';
import type { SliceQueue } from './plan-compaction.js';
import { S3LakeStore } from '../lake/s3-lake-store.js';
import { S3RawOrganizations } from './s3-raw-organizations.js';
import { SqsSliceQueue } from './sqs-slice-queue.js';
import { SqsSliceRetries } from './sqs-slice-retries.js';

/** Everything that varies between the deployed functions, the local stack and the tests. */
export interface CompactionConfig {
  /** The data bucket; needed unless `store` is given. */
  dataBucket?: string;
  s3?: S3Client;
  s3ForcePathStyle?: boolean;
  store?: LakeStore;
  logger?: Logger;
  metrics?: Metrics;
  /** The tenancy table, where the stack's erasure secret is kept; with it (or `erasureSecret`) compaction applies erasure requests. */
  tenancyTable?: string;
  dynamodb?: DynamoDBClient;
  erasureSecret?: ErasureSecret;
}

export interface WorkerConfig extends CompactionConfig {
  /** The compaction queue's URL, to bring failed slices back sooner; without it they wait out the visibility timeout. */
  queueUrl?: string;
  sqs?: SQSClient;
  /** Replaces the SQS adapter that brings failed slices back (tests). */
  retries?: SliceRetries;
  /** The clock that decides whether a waiting switch may still wait (tests on a virtual clock). */
  now?: () => Date;
}

export interface PlannerConfig extends CompactionConfig {
  /** The compaction queue's URL; needed unless `queue` is given. */
  queueUrl?: string;
  sqs?: SQSClient;
  queue?: SliceQueue;
  pending?: PendingOptions;
  /**
   * List the raw prefixes one organization at a time (a delimiter listing finds the organizations): set for the
   * deployed planner; S3 emulators such as s3rver cannot answer the delimiter listing.
   */
  listByOrganization?: boolean;
  /** Listed input bytes one worker is given before a slice is split across part workers (tests force a split with a small one). */
  partWorkerBytes?: number;
}

const SERVICE = SERVICE_NAMES.compaction;

function compactionConfigFromEnv(env: NodeJS.ProcessEnv): CompactionConfig {
  return { dataBucket: requireEnv(ENV.dataBucket, env), s3ForcePathStyle: env[ENV.s3ForcePathStyle] === 'true', tenancyTable: requireEnv(ENV.tenancyTable, env) };
}

/** The erasure requests over `store` and the stack's secret, when the configuration names where the secret is. */
function erasuresOf(config: CompactionConfig, store: LakeStore): { erasures: StoredErasures; secret: ErasureSecret } | undefined {
  const secret = config.erasureSecret ?? (config.tenancyTable === undefined ? undefined : new DynamoDbErasureSecret(config.dynamodb ?? new DynamoDBClient({ maxAttempts: 5 }), config.tenancyTable));
  return secret ? { erasures: new StoredErasures(store, secret), secret } : undefined;
}

/** The configuration of the deployed worker, read from its environment once at cold start. */
export function workerConfigFromEnv(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  return { ...compactionConfigFromEnv(env), queueUrl: requireEnv(ENV.compactionQueueUrl, env) };
}

/** The configuration of the deployed planner, read from its environment once at cold start. */
export function plannerConfigFromEnv(env: NodeJS.ProcessEnv = process.env): PlannerConfig {
  return { ...compactionConfigFromEnv(env), queueUrl: requireEnv(ENV.compactionQueueUrl, env), listByOrganization: true };
}

/** The composition root of the planner (the scheduled function), for the deployed handler and the tests. */
export function composePlanner(config: PlannerConfig) {
  // One S3 client for the store and the organization listing, created only if one of them needs it.
  let s3 = config.s3;
  const client = () => (s3 ??= s3Client(config));
  const store = config.store ?? new S3LakeStore(client(), bucketOf(config));
  const erasures = erasuresOf(config, store);
  return createPlannerHandler({
    ...(erasures ? { erasures } : {}),
    deps: {
      store,
      queue: config.queue ?? sliceQueue(config),
      ...(config.listByOrganization ? { organizations: new S3RawOrganizations(client(), bucketOf(config)) } : {}),
      ...(config.partWorkerBytes === undefined ? {} : { partWorkerBytes: config.partWorkerBytes }),
    },
    logger: config.logger ?? new Logger({ serviceName: SERVICE }),
    metrics: config.metrics ?? new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE }),
    ...(config.pending ? { pending: config.pending } : {}),
  });
}

/** V8's full collection, present when Node runs with `--expose-gc` (the deployed worker's NODE_OPTIONS). */
const exposedGc = (globalThis as { gc?: () => void }).gc;

/** The composition root of the worker (the queue consumer), for the deployed handler and the tests. */
export function composeWorker(config: WorkerConfig) {
  const store = config.store ?? compactionStore(config);
  const erasures = erasuresOf(config, store);
  return createWorkerHandler({
    deps: {
      store,
      ...(erasures ? { erasures: erasures.erasures } : {}),
      ...(exposedGc ? { collectGarbage: exposedGc } : {}),
    },
    logger: config.logger ?? new Logger({ serviceName: SERVICE }),
    metrics: config.metrics ?? new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE }),
    ...(config.now ? { now: config.now } : {}),
    ...(config.retries === undefined && config.queueUrl === undefined
      ? {}
      : { retries: { scheduler: config.retries ?? new SqsSliceRetries(config.sqs ?? sqsClient(), config.queueUrl!), visibilityTimeoutSeconds: COMPACTION_QUEUE_VISIBILITY_SECONDS } }),
  });
}

const sqsClient = () => new SQSClient({ maxAttempts: 5 });

const s3Client = (config: CompactionConfig) => new S3Client({ maxAttempts: 5, forcePathStyle: config.s3ForcePathStyle === true });

function bucketOf(config: CompactionConfig): string {
  if (config.dataBucket === undefined) throw new Error('compaction: dataBucket is needed unless a store is given');
  return config.dataBucket;
}

function compactionStore(config: CompactionConfig): S3LakeStore {
  return new S3LakeStore(config.s3 ?? s3Client(config), bucketOf(config));
}

function sliceQueue(config: PlannerConfig): SqsSliceQueue {
  if (config.queueUrl === undefined) throw new Error('compaction planner: queueUrl is needed unless a queue is given');
  return new SqsSliceQueue(config.sqs ?? sqsClient(), config.queueUrl);
}
