import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { ENV, requireEnv } from '../shared/runtime/env-names.js';
import type { PendingOptions } from './compact-pending.js';
import type { CompactionStore } from './compact-slice.js';
import { createPlannerHandler } from './create-planner-handler.js';
import { createWorkerHandler } from './create-worker-handler.js';
import type { SliceQueue } from './plan-compaction.js';
import { S3CompactionStore } from './s3-compaction-store.js';
import { SqsSliceQueue } from './sqs-slice-queue.js';

/** Everything that varies between the deployed functions, the local stack and the tests. */
export interface CompactionConfig {
  /** The data bucket; needed unless `store` is given. */
  dataBucket?: string;
  s3?: S3Client;
  s3ForcePathStyle?: boolean;
  store?: CompactionStore;
  rowsPerPart?: number;
  logger?: Logger;
  metrics?: Metrics;
}

export interface PlannerConfig extends CompactionConfig {
  /** The compaction queue's URL; needed unless `queue` is given. */
  queueUrl?: string;
  sqs?: SQSClient;
  queue?: SliceQueue;
  pending?: PendingOptions;
}

const SERVICE = 'trace-compaction';

/** The configuration of the deployed worker, read from its environment once at cold start. */
export function compactionConfigFromEnv(env: NodeJS.ProcessEnv = process.env): CompactionConfig {
  return { dataBucket: requireEnv(ENV.dataBucket, env), s3ForcePathStyle: env[ENV.s3ForcePathStyle] === 'true' };
}

/** The configuration of the deployed planner: the worker's, and the queue it sends to. */
export function plannerConfigFromEnv(env: NodeJS.ProcessEnv = process.env): PlannerConfig {
  return { ...compactionConfigFromEnv(env), queueUrl: requireEnv(ENV.compactionQueueUrl, env) };
}

/** The composition root of the planner (the scheduled function), for the deployed handler and the tests. */
export function composePlanner(config: PlannerConfig) {
  return createPlannerHandler({
    deps: { store: config.store ?? compactionStore(config), queue: config.queue ?? sliceQueue(config) },
    logger: config.logger ?? new Logger({ serviceName: SERVICE }),
    metrics: config.metrics ?? new Metrics({ namespace: 'TraceIngest', serviceName: SERVICE }),
    ...(config.pending ? { pending: config.pending } : {}),
  });
}

/** The composition root of the worker (the queue consumer), for the deployed handler and the tests. */
export function composeWorker(config: CompactionConfig) {
  return createWorkerHandler({
    deps: { store: config.store ?? compactionStore(config), ...(config.rowsPerPart ? { rowsPerPart: config.rowsPerPart } : {}) },
    logger: config.logger ?? new Logger({ serviceName: SERVICE }),
    metrics: config.metrics ?? new Metrics({ namespace: 'TraceIngest', serviceName: SERVICE }),
  });
}

function compactionStore(config: CompactionConfig): S3CompactionStore {
  if (config.dataBucket === undefined) throw new Error('compaction: dataBucket is needed unless a store is given');
  return new S3CompactionStore(config.s3 ?? new S3Client({ maxAttempts: 5, forcePathStyle: config.s3ForcePathStyle === true }), config.dataBucket);
}

function sliceQueue(config: PlannerConfig): SqsSliceQueue {
  if (config.queueUrl === undefined) throw new Error('compaction planner: queueUrl is needed unless a queue is given');
  return new SqsSliceQueue(config.sqs ?? new SQSClient({ maxAttempts: 5 }), config.queueUrl);
}
