import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { SliceQueue } from '../compaction/plan-compaction.js';
import { SqsSliceQueue } from '../compaction/sqs-slice-queue.js';
import { DynamoDbTenancyListing } from '../tenancy-store/dynamodb-tenancy-listing.js';
import { isRetentionDays } from '../shared/domain/retention.js';
import { ENV, requireEnv } from '../shared/runtime/env-names.js';
import { METRICS_NAMESPACE, SERVICE_NAMES } from '../shared/service-constants.js';
import { createRetentionHandler } from './create-retention-handler.js';
import type { RetentionBucket, RetentionTenancy } from './ports.js';
import { S3RetentionBucket } from './s3-retention-bucket.js';

/** Everything that varies between the deployed sweep and the tests. */
export interface RetentionConfig {
  dataBucket?: string;
  tenancyTable?: string;
  queueUrl?: string;
  stackCeilingDays?: number;
  bucket?: RetentionBucket;
  tenancy?: RetentionTenancy;
  queue?: SliceQueue;
  now?: () => Date;
  logger?: Logger;
  metrics?: Metrics;
}

/** The deployed sweep's configuration, read from its environment once at cold start; a bad ceiling fails fast. */
export function retentionConfigFromEnv(env: NodeJS.ProcessEnv = process.env): RetentionConfig {
  const ceiling = env[ENV.dataRetentionDays];
  if (ceiling !== undefined && ceiling !== '' && !isRetentionDays(Number(ceiling))) throw new Error(`${ENV.dataRetentionDays} must be a whole number of days, not '${ceiling}'`);
  return {
    dataBucket: requireEnv(ENV.dataBucket, env),
    tenancyTable: requireEnv(ENV.tenancyTable, env),
    queueUrl: requireEnv(ENV.compactionQueueUrl, env),
    ...(ceiling ? { stackCeilingDays: Number(ceiling) } : {}),
  };
}

const need = (value: string | undefined, name: string): string => {
  if (value === undefined) throw new Error(`retention sweep: ${name} is needed unless its adapter is given`);
  return value;
};

/** The composition root of the scheduled retention sweep, for the deployed handler and the tests. */
export function composeRetentionSweeper(config: RetentionConfig) {
  const SERVICE = SERVICE_NAMES.retention;
  return createRetentionHandler({
    deps: {
      bucket: config.bucket ?? new S3RetentionBucket(new S3Client({ maxAttempts: 5 }), need(config.dataBucket, 'dataBucket')),
      tenancy: config.tenancy ?? new DynamoDbTenancyListing(new DynamoDBClient({ maxAttempts: 5 }), need(config.tenancyTable, 'tenancyTable')),
      ...(config.stackCeilingDays === undefined ? {} : { stackCeilingDays: config.stackCeilingDays }),
      ...(config.now ? { now: config.now } : {}),
    },
    queue: config.queue ?? new SqsSliceQueue(new SQSClient({ maxAttempts: 5 }), need(config.queueUrl, 'queueUrl')),
    logger: config.logger ?? new Logger({ serviceName: SERVICE }),
    metrics: config.metrics ?? new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE }),
  });
}
