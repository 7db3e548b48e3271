import { Duration, Validations } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IStream } from 'aws-cdk-lib/aws-kinesis';
import { StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { KinesisEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership, type LifecycleRule } from 'aws-cdk-lib/aws-s3';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ENV } from '../../lambda/shared/runtime/env-names.js';
import { DATA_PREFIXES, SERVICE_NAMES } from '../../lambda/shared/service-constants.js';
import type { LandingSettings } from '../config.js';
import { acknowledgePrefixWildcards } from './acknowledge.js';
import { failureQueue } from './failure-queue.js';
import { HouseFunction } from './house-function.js';
import { KEPT_UNLESS_CREATE_ROLLED_BACK } from './kept-resources.js';
import { TraceCatalog } from './trace-catalog.js';


/**
 * Days a raw landed object is kept: trace timestamps may be 24 h old when they arrive and a replay may land
 * a record up to the stream retention (24 h) later, so an hour can receive raw data up to ~2 days after it
 * ends; one more day is margin for a compaction outage (its alarms fire within two hours). After this, the
 * compacted objects hold every row.
 */
export const RAW_RETENTION_DAYS = 3;

/**
 * From a raw object's landing to the last manifest PUT it causes: the planner's 15-minute schedule and a worker run,
 * then the replaced generation's 2-hour grace and another planner run and worker run for the clean-up.
 */
export const COMPACTION_LAG_HOURS = 3;

/**
 * Days the `compacted/` rule waits past the `manifests/` rule (`dataRetentionDays`), so that no lifecycle rule expires
 * an object a live manifest names. A dataset with nothing pending is carried over unrewritten into the hour's next
 * manifest (lambda/lake/lifecycle/compact-slice.ts), and the clean-up that drops a replaced generation after its grace PUTs
 * the manifest once more, so a manifest can be younger than the objects it names by: a trace 24 h old when received,
 * plus a replay within the stream retention, plus a day of compaction outage (as for {@link RAW_RETENTION_DAYS}), plus
 * {@link COMPACTION_LAG_HOURS}. Each rule counts from its own object's creation and rounds up to a midnight UTC
 * ("adding the number of days specified in the rule to the object creation time and rounding the resulting time to the
 * next day midnight UTC", https://docs.aws.amazon.com/AmazonS3/latest/userguide/intro-lifecycle-rules.html), so one more
 * day puts the compacted object's midnight after its manifest's. Only the backstop waits: the sweep deletes both at the
 * retention.
 */
export function compactedExpiryMarginDays(streamRetentionHours: number): number {
  const manifestYoungerByHours = 24 + streamRetentionHours + 24 + COMPACTION_LAG_HOURS;
  return Math.ceil(manifestYoungerByHours / 24) + 1;
}

/** What both buckets are: private, encrypted, TLS only, owned by the account, kept when the stack goes. */
const PRIVATE_BUCKET = {
  blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
  encryption: BucketEncryption.S3_MANAGED,
  enforceSSL: true,
  minimumTLSVersion: 1.2,
  objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
  removalPolicy: KEPT_UNLESS_CREATE_ROLLED_BACK,
} as const;

export interface LandingProps {
  readonly projectRoot: string;
  /** Handler file relative to `projectRoot`. */
  readonly entry: string;
  readonly stream: IStream;
  readonly settings: LandingSettings;
  readonly logRetention: RetentionDays;
  readonly metricsNamespace: string;
  readonly accessLogRetentionDays: number;
  readonly dataRetentionDays?: number;
  /** How long the stream keeps a record, so how late a replay can land an hour's raw data. */
  readonly streamRetentionHours: number;
  /** The Glue database a deployed stack keeps (lib/config.ts `glueDatabaseName`). */
  readonly keptGlueDatabaseName?: string;
}

/**
 * The landing link: the data bucket (and its access-log bucket), the consumer that turns stream
 * records into Parquet, its event source mapping and failure queue, and the Glue/Athena catalog.
 */
export class Landing extends Construct {
  public readonly bucket: Bucket;
  public readonly accessLogsBucket: Bucket;
  public readonly consumer: HouseFunction;
  public readonly failureQueue: Queue;
  public readonly eventSource: KinesisEventSource;
  public readonly catalog: TraceCatalog;

  constructor(scope: Construct, id: string, props: LandingProps) {
    super(scope, id);
    // Server access logs are delivered under a bucket policy, not an ACL, so the log bucket can disable ACLs.
    this.node.setContext('@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy', true);
    const { settings } = props;

    this.accessLogsBucket = new Bucket(this, 'AccessLogsBucket', {
      ...PRIVATE_BUCKET,
      lifecycleRules: [{ id: 'ExpireAccessLogs', expiration: Duration.days(props.accessLogRetentionDays) }],
    });
    Validations.of(this.accessLogsBucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'This bucket receives the server access logs of the data bucket; logging it into itself would loop.',
    });

    this.bucket = new Bucket(this, 'DataBucket', {
      ...PRIVATE_BUCKET,
      serverAccessLogsBucket: this.accessLogsBucket,
      serverAccessLogsPrefix: 'data-bucket/',
      lifecycleRules: dataLifecycle(props.dataRetentionDays, props.streamRetentionHours),
    });

    this.failureQueue = failureQueue(this, 'FailureQueue', { holds: 'pointers to the stream batches the consumer failed on, for replay' });

    this.consumer = new HouseFunction(this, 'Consumer', {
      projectRoot: props.projectRoot,
      entry: props.entry,
      description: 'Lands trace stream records as Parquet in the data bucket',
      serviceName: SERVICE_NAMES.landing,
      metricsNamespace: props.metricsNamespace,
      logRetention: props.logRetention,
      memorySize: settings.memorySize,
      timeout: settings.timeout,
      environment: { [ENV.dataBucket]: this.bucket.bucketName },
    });
    this.consumer.addToRolePolicy(
      new PolicyStatement({ actions: ['s3:GetObject'], resources: [this.bucket.arnForObjects(`${DATA_PREFIXES.overflow}*`)] }),
    );
    // Without s3:ListBucket S3 answers a missing key with 403, not 404 ("If you don't have the s3:ListBucket
    // permission, Amazon S3 returns an HTTP status code 403", https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html),
    // and a missing overflow object would be retried and bisected instead of dead-lettered. No s3:prefix condition:
    // a GetObject request carries no prefix, so such a condition would never match.
    this.consumer.addToRolePolicy(new PolicyStatement({ actions: ['s3:ListBucket'], resources: [this.bucket.bucketArn] }));
    this.consumer.addToRolePolicy(
      new PolicyStatement({
        actions: ['s3:PutObject'],
        resources: [DATA_PREFIXES.traces, DATA_PREFIXES.spans, DATA_PREFIXES.deadLetter].map((prefix) => this.bucket.arnForObjects(`${prefix}*`)),
      }),
    );

    acknowledgePrefixWildcards(
      this.consumer.role ?? this.consumer,
      this.bucket,
      [DATA_PREFIXES.overflow, DATA_PREFIXES.traces, DATA_PREFIXES.spans, DATA_PREFIXES.deadLetter],
      'Object keys (org, date, first sequence number) are chosen at run time; the grant is limited to the prefixes the consumer reads or writes.',
    );

    this.eventSource = new KinesisEventSource(props.stream, {
      startingPosition: StartingPosition.TRIM_HORIZON,
      batchSize: settings.batchSize,
      maxBatchingWindow: settings.maxBatchingWindow,
      // Whole batches fail: a mid-batch checkpoint would change the deterministic object keys of the retry.
      reportBatchItemFailures: false,
      bisectBatchOnError: true,
      parallelizationFactor: 1,
      retryAttempts: settings.retryAttempts,
      maxRecordAge: settings.maxRecordAge,
      onFailure: new SqsDlq(this.failureQueue),
    });
    this.consumer.addEventSource(this.eventSource);

    this.catalog = new TraceCatalog(this, 'Catalog', {
      bucket: this.bucket,
      resultsPrefix: DATA_PREFIXES.athenaResults,
      ...(props.keptGlueDatabaseName === undefined ? {} : { keptDatabaseName: props.keptGlueDatabaseName }),
    });
  }
}

function dataLifecycle(dataRetentionDays: number | undefined, streamRetentionHours: number): LifecycleRule[] {
  const rules: LifecycleRule[] = [
    { id: 'AbortIncompleteUploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
    // Oversized traces are only needed until the consumer has landed them (or a replay has).
    { id: 'ExpireOverflow', prefix: DATA_PREFIXES.overflow, expiration: Duration.days(7) },
    { id: 'ExpireDeadLetters', prefix: DATA_PREFIXES.deadLetter, expiration: Duration.days(90) },
    { id: 'ExpireAthenaResults', prefix: DATA_PREFIXES.athenaResults, expiration: Duration.days(7) },
  ];
  for (const prefix of [DATA_PREFIXES.traces, DATA_PREFIXES.spans]) {
    rules.push({ id: `ExpireRaw${prefix === DATA_PREFIXES.traces ? 'Traces' : 'Spans'}`, prefix, expiration: Duration.days(RAW_RETENTION_DAYS) });
  }
  if (dataRetentionDays !== undefined) {
    rules.push(
      { id: 'ExpireCompacted', prefix: DATA_PREFIXES.compacted, expiration: Duration.days(dataRetentionDays + compactedExpiryMarginDays(streamRetentionHours)) },
      { id: 'ExpireManifests', prefix: DATA_PREFIXES.manifests, expiration: Duration.days(dataRetentionDays) },
    );
  }
  return rules;
}
