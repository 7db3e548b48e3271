import { Duration } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { isRetentionDays, MAX_RETENTION_DAYS } from '../lambda/shared/domain/retention.js';
import { FUNCTION_TIMEOUT_SECONDS } from '../lambda/shared/service-constants.js';

/** Settings of the consumer that lands stream records as Parquet. */
export interface LandingSettings {
  /** Records per invocation; the event source also caps a batch at Lambda's 6 MB payload. */
  readonly batchSize: number;
  /** How long the event source gathers records before invoking (at most 300 s). */
  readonly maxBatchingWindow: Duration;
  /** Retries of a failed batch before its pointer goes to the failure queue. */
  readonly retryAttempts: number;
  /** Records older than this are sent to the failure queue instead of being retried. */
  readonly maxRecordAge: Duration;
  readonly memorySize: number;
  readonly timeout: Duration;
}

/** Settings of the ingest function behind the API. */
export interface IngestSettings {
  readonly memorySize: number;
  /** Stays below API Gateway's 29 s integration timeout so the function answers, not the gateway. */
  readonly timeout: Duration;
  /** Seconds a warm container trusts a cached API key lookup. */
  readonly keyCacheSeconds: number;
}

/** Settings of the compaction fan-out (planner → SQS FIFO queue → workers). */
export interface CompactionSettings {
  /**
   * Most worker invocations at once (the SQS event source's maximum concurrency, 2..1000): the ceiling on slices
   * compacted in parallel, and on the compaction's share of the account's Lambda concurrency.
   */
  readonly maxConcurrency: number;
  /**
   * Concurrency reserved for the planner, so a slow listing never runs twice at once; undefined (the default)
   * reserves none. Lambda keeps at least 100 executions of an account unreserved ("you can reserve up to the
   * Unreserved account concurrency value minus 100", https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html),
   * so on a new account with a low concurrency quota any reservation fails the deploy. Two overlapping planner
   * runs are safe: the FIFO queue deduplicates what both send.
   */
  readonly plannerReservedConcurrency?: number;
}

/**
 * What `cdk destroy` does with the Kinesis stream. It holds only copies of traces already landed or on their
 * way (at most `streamRetentionHours`), and bills ~$29/month on demand with no reader, so it goes by default.
 */
export type StreamRemovalPolicy = 'destroy' | 'retain';

/**
 * How the trace stream is billed and sized: on demand (pay per GB and per stream hour, scales by
 * itself) or provisioned with a fixed shard count (pay per shard hour and per 25 KB PUT payload unit;
 * each shard takes 1 MB/s or 1,000 records/s in). See docs/deploy.md "Cost model".
 */
export type StreamCapacity = { readonly mode: 'on-demand' } | { readonly mode: 'provisioned'; readonly shards: number };

/** The stack `bin/app.ts` deploys without `-c stackName=…`. */
export const DEFAULT_STACK_NAME = 'TraceIngest';

/** Everything the stack can be told; `bin/app.ts` builds it from CDK context. */
export interface TraceIngestConfig {
  /** API Gateway stage name, part of the URL. */
  readonly stageName: string;
  /** Steady-state requests per second the stage lets through before answering 429. */
  readonly throttlingRateLimit: number;
  /** Burst of requests the stage lets through. */
  readonly throttlingBurstLimit: number;
  /** Retention of every log group of the stack. */
  readonly logRetention: RetentionDays;
  /** Hours the stream keeps records (24 is the included retention). */
  readonly streamRetentionHours: number;
  readonly streamCapacity: StreamCapacity;
  /** What deleting the stack does with the stream; default `destroy`. */
  readonly streamRemovalPolicy: StreamRemovalPolicy;
  /** Days server access logs of the data bucket are kept. */
  readonly accessLogRetentionDays: number;
  /** Days before landed Parquet expires; undefined keeps it. */
  readonly dataRetentionDays?: number;
  /** E-mail subscribed to the alarm topic; undefined leaves the topic without subscribers. */
  readonly alarmEmail?: string;
  /**
   * Whether the stack sets the account's API Gateway CloudWatch role (AWS::ApiGateway::Account), one setting per
   * account and region that every REST API there logs through. Off by default: a second stack in the region would
   * take the setting over, and a failed first create of that stack deletes its role while the setting still names
   * it, silencing every REST API's logs. Off, the account must have the role set already (docs/deploy.md).
   */
  readonly apiGatewayCloudWatchRole: boolean;
  /**
   * The Glue database a deployed stack keeps when the synth refuses its name's Glue form (`catalogDatabaseName` in
   * lib/constructs/trace-catalog.ts): the name it has (output `GlueDatabaseName`), or the synth fails.
   */
  readonly glueDatabaseName?: string;
  readonly ingest: IngestSettings;
  readonly landing: LandingSettings;
  readonly compaction: CompactionSettings;
}

export const DEFAULT_CONFIG: TraceIngestConfig = {
  stageName: 'prod',
  throttlingRateLimit: 100,
  throttlingBurstLimit: 200,
  logRetention: RetentionDays.ONE_MONTH,
  streamRetentionHours: 24,
  streamCapacity: { mode: 'on-demand' },
  streamRemovalPolicy: 'destroy',
  accessLogRetentionDays: 90,
  apiGatewayCloudWatchRole: false,
  ingest: {
    memorySize: 1024,
    timeout: Duration.seconds(FUNCTION_TIMEOUT_SECONDS.ingest),
    keyCacheSeconds: 30,
  },
  landing: {
    batchSize: 1000,
    maxBatchingWindow: Duration.seconds(5),
    retryAttempts: 5,
    maxRecordAge: Duration.hours(6),
    // docs/landing.md "Sizing": 1,024 MB; 1,769 MB (a full vCPU) if the iterator age grows.
    memorySize: 1024,
    timeout: Duration.seconds(FUNCTION_TIMEOUT_SECONDS.landing),
  },
  // docs/landing.md "Capacity": 10 slices at ~17k rows/s each; raise it for many busy organizations.
  compaction: { maxConcurrency: 10 },
};

/** Rejects settings AWS would reject at deploy time, or that break the consumer's guarantees. */
export function validateConfig(config: TraceIngestConfig): TraceIngestConfig {
  const problems: string[] = [];
  const { ingest, landing } = config;
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(config.stageName)) problems.push(`stageName '${config.stageName}' must match [A-Za-z0-9_-]{1,128}`);
  if (!(config.throttlingRateLimit > 0)) problems.push('throttlingRateLimit must be > 0');
  if (!(config.throttlingBurstLimit > 0)) problems.push('throttlingBurstLimit must be > 0');
  if (!isIntIn(config.streamRetentionHours, 24, 8760)) problems.push('streamRetentionHours must be an integer in 24..8760');
  if (config.streamCapacity.mode === 'provisioned' && !isIntIn(config.streamCapacity.shards, 1, 10000)) {
    problems.push('streamShards must be an integer in 1..10000 (and within the account shard quota) for a provisioned stream');
  }
  if (config.streamCapacity.mode !== 'provisioned' && config.streamCapacity.mode !== 'on-demand') problems.push("streamCapacityMode must be 'on-demand' or 'provisioned'");
  if (!isIntIn(config.accessLogRetentionDays, 1, 3650)) problems.push('accessLogRetentionDays must be an integer in 1..3650');
  if (config.dataRetentionDays !== undefined && !isRetentionDays(config.dataRetentionDays)) problems.push(`dataRetentionDays must be a whole number of days from 1 to ${MAX_RETENTION_DAYS}`);
  if (ingest.timeout.toSeconds() >= 29) problems.push('ingest.timeout must be below the 29 s API Gateway integration timeout');
  if (!isIntIn(ingest.memorySize, 128, 10240)) problems.push('ingest.memorySize must be an integer in 128..10240');
  if (!isIntIn(ingest.keyCacheSeconds, 0, 3600)) problems.push('ingest.keyCacheSeconds must be an integer in 0..3600');
  if (!isIntIn(landing.batchSize, 1, 10000)) problems.push('landing.batchSize must be an integer in 1..10000');
  if (landing.maxBatchingWindow.toSeconds() > 300) problems.push('landing.maxBatchingWindow must be at most 300 s');
  if (!isIntIn(landing.retryAttempts, 0, 10000)) problems.push('landing.retryAttempts must be a finite integer in 0..10000');
  const ageSeconds = landing.maxRecordAge.toSeconds();
  if (ageSeconds < 60 || ageSeconds > 604800) problems.push('landing.maxRecordAge must be between 60 s and 7 days');
  if (ageSeconds >= config.streamRetentionHours * 3600) problems.push('landing.maxRecordAge must be shorter than the stream retention, or failed records expire before they can be replayed');
  if (!isIntIn(landing.memorySize, 128, 10240)) problems.push('landing.memorySize must be an integer in 128..10240');
  if (landing.timeout.toSeconds() > 900) problems.push('landing.timeout must be at most 900 s');
  const reserved = config.compaction.plannerReservedConcurrency;
  if (reserved !== undefined && !isIntIn(reserved, 1, 1000)) problems.push('compaction.plannerReservedConcurrency must be an integer in 1..1000, or unset (no reservation)');
  if (config.streamRemovalPolicy !== 'destroy' && config.streamRemovalPolicy !== 'retain') problems.push("streamRemovalPolicy must be 'destroy' or 'retain'");
  if (!isIntIn(config.compaction.maxConcurrency, 2, 1000)) problems.push('compaction.maxConcurrency must be an integer in 2..1000 (the SQS event source maximum concurrency)');
  if (problems.length > 0) throw new Error(`Invalid Trace Ingest configuration:\n- ${problems.join('\n- ')}`);
  return config;
}

function isIntIn(value: number, min: number, max: number): boolean {
  return Number.isInteger(value) && value >= min && value <= max;
}
