/**
 * Names of the environment variables the Lambdas read. Defined once: the CDK stack sets them,
 * the local stack sets them, the handlers read them.
 */
export const ENV = {
  /** DynamoDB table holding organizations, workspaces and API keys. */
  tenancyTable: 'TENANCY_TABLE',
  /** DynamoDB table holding the rate-window counters (and idempotency records). */
  rateTable: 'RATE_TABLE',
  /** Kinesis data stream that carries accepted traces. */
  traceStream: 'TRACE_STREAM',
  /** S3 bucket: landed Parquet, oversized traces carried by reference, dead letters. */
  dataBucket: 'DATA_BUCKET',
  /** Seconds a warm container trusts a cached API key lookup (default 30). */
  keyCacheSeconds: 'KEY_CACHE_SECONDS',
  /** URL of the compaction queue (SQS FIFO): the planner sends pending slices to it, the worker delays retries on it. */
  compactionQueueUrl: 'COMPACTION_QUEUE_URL',
  /** The stack's `dataRetentionDays`, when set: the ceiling over every plan's and organization's retention (the retention sweep). */
  dataRetentionDays: 'DATA_RETENTION_DAYS',
  /** `true` only for S3 emulators (the local stack) that need path-style addressing. */
  s3ForcePathStyle: 'S3_FORCE_PATH_STYLE',
} as const;

export type EnvName = (typeof ENV)[keyof typeof ENV];

/** Reads a required variable once at cold start; a missing one fails fast with its name. */
export function requireEnv(name: EnvName, env: NodeJS.ProcessEnv = process.env): string {
  const value = env[name];
  if (value === undefined || value === '') {
    throw new Error(`Missing required environment variable ${name}`);
  }
  return value;
}
