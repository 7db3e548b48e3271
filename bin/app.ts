import { fileURLToPath } from 'node:url';
import { App, Duration, Validations } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { DEFAULT_CONFIG, DEFAULT_STACK_NAME, type StreamCapacity, validateConfig, type TraceIngestConfig } from '../lib/config.js';
import { TraceIngestStack } from '../lib/trace-ingest-stack.js';

const app = new App();

/** Context value as given in cdk.json (JSON types) or with `-c key=value` (always a string). */
function context(key: string): unknown {
  const value: unknown = app.node.tryGetContext(key);
  return value === '' ? undefined : value;
}

function num(key: string, fallback: number): number {
  const value = context(key);
  if (value === undefined) return fallback;
  const parsed = typeof value === 'number' ? value : Number(value);
  if (!Number.isFinite(parsed)) throw new Error(`Context ${key} must be a number, got ${JSON.stringify(value)}`);
  return parsed;
}

function optionalNum(key: string): number | undefined {
  return context(key) === undefined ? undefined : num(key, 0);
}

function str(key: string, fallback: string): string {
  const value = context(key);
  return value === undefined ? fallback : String(value);
}

function bool(key: string, fallback: boolean): boolean {
  const value = context(key);
  if (value === undefined) return fallback;
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new Error(`Context ${key} must be true or false, got ${JSON.stringify(value)}`);
}

function retention(key: string, fallback: RetentionDays): RetentionDays {
  const days = num(key, fallback);
  if (!Object.values(RetentionDays).includes(days)) throw new Error(`Context ${key}: ${days} is not a CloudWatch Logs retention (1, 3, 5, 7, 14, 30, 60, 90, …)`);
  return days as RetentionDays;
}

/** `streamCapacityMode` on-demand (default) or provisioned, with `streamShards` for provisioned. */
function streamCapacity(): StreamCapacity {
  const mode = str('streamCapacityMode', defaults.streamCapacity.mode);
  if (mode === 'on-demand') {
    if (context('streamShards') !== undefined) throw new Error('Context streamShards applies only with streamCapacityMode=provisioned');
    return { mode };
  }
  if (mode === 'provisioned') {
    if (context('streamShards') === undefined) throw new Error('Context streamCapacityMode=provisioned needs streamShards (the shard count)');
    return { mode, shards: num('streamShards', 0) };
  }
  throw new Error(`Context streamCapacityMode must be 'on-demand' or 'provisioned', got ${JSON.stringify(mode)}`);
}

const defaults = DEFAULT_CONFIG;
const dataRetentionDays = optionalNum('dataRetentionDays');
const alarmEmail = context('alarmEmail');
const glueDatabaseName = context('glueDatabaseName');
const config: TraceIngestConfig = validateConfig({
  stageName: str('stage', defaults.stageName),
  throttlingRateLimit: num('throttlingRateLimit', defaults.throttlingRateLimit),
  throttlingBurstLimit: num('throttlingBurstLimit', defaults.throttlingBurstLimit),
  logRetention: retention('logRetentionDays', defaults.logRetention),
  streamRetentionHours: num('streamRetentionHours', defaults.streamRetentionHours),
  streamCapacity: streamCapacity(),
  streamRemovalPolicy: str('streamRemovalPolicy', defaults.streamRemovalPolicy) as TraceIngestConfig['streamRemovalPolicy'],
  accessLogRetentionDays: num('accessLogRetentionDays', defaults.accessLogRetentionDays),
  apiGatewayCloudWatchRole: bool('apiGatewayCloudWatchRole', defaults.apiGatewayCloudWatchRole),
  ...(dataRetentionDays === undefined ? {} : { dataRetentionDays }),
  ...(alarmEmail === undefined ? {} : { alarmEmail: String(alarmEmail) }),
  ...(glueDatabaseName === undefined ? {} : { glueDatabaseName: String(glueDatabaseName) }),
  ingest: {
    memorySize: num('ingestMemoryMb', defaults.ingest.memorySize),
    timeout: Duration.seconds(num('ingestTimeoutSeconds', defaults.ingest.timeout.toSeconds())),
    keyCacheSeconds: num('keyCacheSeconds', defaults.ingest.keyCacheSeconds),
  },
  landing: {
    batchSize: num('landingBatchSize', defaults.landing.batchSize),
    maxBatchingWindow: Duration.seconds(num('landingBatchingWindowSeconds', defaults.landing.maxBatchingWindow.toSeconds())),
    retryAttempts: num('landingRetryAttempts', defaults.landing.retryAttempts),
    maxRecordAge: Duration.seconds(num('landingMaxRecordAgeSeconds', defaults.landing.maxRecordAge.toSeconds())),
    memorySize: num('landingMemoryMb', defaults.landing.memorySize),
    timeout: Duration.seconds(num('landingTimeoutSeconds', defaults.landing.timeout.toSeconds())),
  },
  compaction: {
    maxConcurrency: num('compactionMaxConcurrency', defaults.compaction.maxConcurrency),
    ...(optionalNum('plannerReservedConcurrency') === undefined ? {} : { plannerReservedConcurrency: optionalNum('plannerReservedConcurrency') }),
  },
});

const stack = new TraceIngestStack(app, str('stackName', DEFAULT_STACK_NAME), {
  description: 'Trace Ingest: HTTP ingest of agent and LLM traces, landed as Parquet for Athena',
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  config,
  projectRoot: fileURLToPath(new URL('..', import.meta.url)),
});

Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
void stack;
