import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import { Metric } from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import { DATA_PREFIXES, METRICS_NAMESPACE } from '../lambda/shared/service-constants.js';
import type { TraceIngestConfig } from './config.js';
import { IngestApi, THROTTLED_METRIC_NAME } from './constructs/ingest-api.js';
import { Compaction } from './constructs/compaction.js';
import { Landing } from './constructs/landing.js';
import { Monitoring } from './constructs/monitoring.js';
import { Retention } from './constructs/retention.js';
import { TenancyTables } from './constructs/tenancy-tables.js';
import { TraceStream } from './constructs/trace-stream.js';

/** Names of the stack outputs; the admin CLI reads them. */
export const OUTPUTS = {
  apiUrl: 'ApiUrl',
  tenancyTableName: 'TenancyTableName',
  rateTableName: 'RateTableName',
  traceStreamName: 'TraceStreamName',
  dataBucketName: 'DataBucketName',
  /** Present only when `dataRetentionDays` is set: the admin CLI shows it as the ceiling over every retention. */
  dataRetentionDays: 'DataRetentionDays',
} as const;

export interface TraceIngestStackProps extends StackProps {
  readonly config: TraceIngestConfig;
  /** Repository root, for bundling the functions. */
  readonly projectRoot: string;
  /** Handler files relative to `projectRoot`; the defaults are the service's handlers. */
  readonly entries?: Partial<FunctionEntries>;
}

export interface FunctionEntries {
  readonly ingest: string;
  readonly landing: string;
  readonly compactionPlanner: string;
  readonly compactionWorker: string;
  readonly retentionSweeper: string;
}

export const DEFAULT_ENTRIES: FunctionEntries = {
  ingest: 'lambda/ingest/handler.ts',
  landing: 'lambda/landing/handler.ts',
  compactionPlanner: 'lambda/compaction/planner-handler.ts',
  compactionWorker: 'lambda/compaction/worker-handler.ts',
  retentionSweeper: 'lambda/retention/handler.ts',
};

/** The whole Trace Ingest service: API → ingest function → stream → consumer → Parquet in S3 → Athena. */
export class TraceIngestStack extends Stack {
  public readonly tables: TenancyTables;
  public readonly traceStream: TraceStream;
  public readonly landing: Landing;
  public readonly compaction: Compaction;
  public readonly retention: Retention;
  public readonly ingest: IngestApi;
  public readonly monitoring: Monitoring;

  constructor(scope: Construct, id: string, props: TraceIngestStackProps) {
    super(scope, id, props);
    const { config, projectRoot } = props;
    const entries = { ...DEFAULT_ENTRIES, ...props.entries };

    this.tables = new TenancyTables(this, 'Tables');
    this.traceStream = new TraceStream(this, 'TraceStream', { retentionHours: config.streamRetentionHours, capacity: config.streamCapacity, removalPolicy: config.streamRemovalPolicy });
    this.landing = new Landing(this, 'Landing', {
      projectRoot,
      entry: entries.landing,
      stream: this.traceStream.stream,
      settings: config.landing,
      logRetention: config.logRetention,
      metricsNamespace: METRICS_NAMESPACE,
      accessLogRetentionDays: config.accessLogRetentionDays,
      ...(config.dataRetentionDays === undefined ? {} : { dataRetentionDays: config.dataRetentionDays }),
      streamRetentionHours: config.streamRetentionHours,
      ...(config.glueDatabaseName === undefined ? {} : { keptGlueDatabaseName: config.glueDatabaseName }),
    });
    this.compaction = new Compaction(this, 'Compaction', {
      projectRoot,
      plannerEntry: entries.compactionPlanner,
      workerEntry: entries.compactionWorker,
      bucket: this.landing.bucket,
      tenancyTable: this.tables.tenancyTable,
      settings: config.compaction,
      logRetention: config.logRetention,
      metricsNamespace: METRICS_NAMESPACE,
    });
    this.retention = new Retention(this, 'Retention', {
      projectRoot,
      entry: entries.retentionSweeper,
      bucket: this.landing.bucket,
      tenancyTable: this.tables.tenancyTable,
      compactionQueue: this.compaction.queue,
      ...(config.dataRetentionDays === undefined ? {} : { dataRetentionDays: config.dataRetentionDays }),
      logRetention: config.logRetention,
      metricsNamespace: METRICS_NAMESPACE,
    });
    this.ingest = new IngestApi(this, 'Ingest', {
      projectRoot,
      entry: entries.ingest,
      tenancyTable: this.tables.tenancyTable,
      rateTable: this.tables.rateTable,
      stream: this.traceStream.stream,
      bucket: this.landing.bucket,
      overflowPrefix: DATA_PREFIXES.overflow,
      settings: config.ingest,
      stageName: config.stageName,
      ownsAccountCloudWatchRole: config.apiGatewayCloudWatchRole,
      throttlingRateLimit: config.throttlingRateLimit,
      throttlingBurstLimit: config.throttlingBurstLimit,
      logRetention: config.logRetention,
      metricsNamespace: METRICS_NAMESPACE,
    });
    this.monitoring = new Monitoring(this, 'Monitoring', {
      api: this.ingest.api,
      ingestFunction: this.ingest.handler,
      consumer: this.landing.consumer,
      compaction: this.compaction,
      retentionSweeper: this.retention.sweeper,
      tenancyTable: this.tables.tenancyTable,
      rateTable: this.tables.rateTable,
      stream: this.traceStream.stream,
      failureQueue: this.landing.failureQueue,
      throttledResponses: new Metric({ namespace: METRICS_NAMESPACE, metricName: THROTTLED_METRIC_NAME, statistic: 'Sum' }),
      ...(config.alarmEmail === undefined ? {} : { alarmEmail: config.alarmEmail }),
    });
    // The alarms are created after the planner's first run has started: a new stack does not start with CompactionNotRunning in ALARM.
    this.compaction.firstPlannerRun.executeBefore(this.monitoring);

    new CfnOutput(this, OUTPUTS.apiUrl, { value: this.ingest.api.url, description: 'Base URL of the stage; POST traces to <ApiUrl>v1/traces/ingest' });
    new CfnOutput(this, OUTPUTS.tenancyTableName, { value: this.tables.tenancyTable.tableName });
    new CfnOutput(this, OUTPUTS.rateTableName, { value: this.tables.rateTable.tableName });
    new CfnOutput(this, OUTPUTS.traceStreamName, { value: this.traceStream.stream.streamName });
    new CfnOutput(this, OUTPUTS.dataBucketName, { value: this.landing.bucket.bucketName });
    if (config.dataRetentionDays !== undefined) new CfnOutput(this, OUTPUTS.dataRetentionDays, { value: String(config.dataRetentionDays), description: 'The ceiling over every plan\'s and organization\'s retention, in days' });
    new CfnOutput(this, 'IngestUrl', { value: this.ingest.ingestUrl });
    new CfnOutput(this, 'OtlpTracesUrl', { value: this.ingest.otlpTracesUrl });
    new CfnOutput(this, 'GlueDatabaseName', { value: this.landing.catalog.databaseName });
    new CfnOutput(this, 'AthenaWorkGroup', { value: this.landing.catalog.workGroup.ref });
    new CfnOutput(this, 'FailureQueueUrl', { value: this.landing.failureQueue.queueUrl });
    new CfnOutput(this, 'CompactionDeadLetterQueueUrl', { value: this.compaction.deadLetterQueue.queueUrl });
    new CfnOutput(this, 'AlarmTopicArn', { value: this.monitoring.topic.topicArn });
  }
}
