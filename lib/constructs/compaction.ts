import { Annotations, Duration } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { Bucket } from 'aws-cdk-lib/aws-s3';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ENV } from '../../lambda/shared/runtime/env-names.js';
import { tenancyKeys } from '../../lambda/shared/tables.js';
import { COMPACTION_MAX_RECEIVE_COUNT, COMPACTION_QUEUE_VISIBILITY_SECONDS, DATA_PREFIXES, FUNCTION_TIMEOUT_SECONDS, SERVICE_NAMES } from '../../lambda/shared/service-constants.js';
import type { CompactionSettings } from '../config.js';
import { acknowledgePrefixWildcards } from './acknowledge.js';
import { failureQueue } from './failure-queue.js';
import { FirstRunTrigger } from './first-run-trigger.js';
import { HouseFunction } from './house-function.js';

/** Key prefixes compaction reads or writes; raw ones are the landing's. */
export const COMPACTION_PREFIXES = { traces: DATA_PREFIXES.traces, spans: DATA_PREFIXES.spans, compacted: DATA_PREFIXES.compacted, partPlans: DATA_PREFIXES.partPlans, manifests: DATA_PREFIXES.manifests } as const;

/** The worker's timeout: the largest slice must fit in one invocation (docs/landing.md "Capacity"). */
export const COMPACTION_WORKER_TIMEOUT = Duration.seconds(FUNCTION_TIMEOUT_SECONDS.compactionWorker);

/** Six times the worker's timeout (see `COMPACTION_QUEUE_VISIBILITY_SECONDS`); a failed slice comes back sooner, by the worker's backoff. */
export const COMPACTION_VISIBILITY_TIMEOUT = Duration.seconds(COMPACTION_QUEUE_VISIBILITY_SECONDS);

export { COMPACTION_MAX_RECEIVE_COUNT };

/** The worker's Node flags: the house's source maps, and `gc()` for `collectGarbage`. */
export const COMPACTION_NODE_OPTIONS = '--enable-source-maps --expose-gc';

export interface CompactionProps {
  readonly projectRoot: string;
  /** Handler files relative to `projectRoot`. */
  readonly plannerEntry: string;
  readonly workerEntry: string;
  readonly bucket: Bucket;
  /** The tenancy table: one item of it holds the stack's erasure secret (lambda/erasure/dynamodb-erasure-secret.ts). */
  readonly tenancyTable: ITable;
  readonly settings: CompactionSettings;
  readonly logRetention: RetentionDays;
  readonly metricsNamespace: string;
}

/**
 * Compaction as a fan-out. An EventBridge schedule runs the planner, which lists the raw objects, reads the
 * manifests and sends one message per pending slice to an SQS FIFO queue, the slice id as message group. The
 * worker consumes the queue, one slice per invocation, up to `settings.maxConcurrency` at once; FIFO hands out
 * one message of a group at a time, so two compactions of one slice never overlap (they could each delete the
 * other's new objects as unreferenced). A slice that keeps failing moves to the dead-letter queue.
 */
export class Compaction extends Construct {
  public readonly planner: HouseFunction;
  public readonly worker: HouseFunction;
  public readonly queue: Queue;
  public readonly deadLetterQueue: Queue;
  public readonly eventSource: SqsEventSource;
  public readonly schedule: Rule;
  /**
   * The planner's first run, started during the create that makes the stack: `CompactionNotRunning` treats no data
   * as the failure it watches for, so anything created after this (the stack puts its monitoring after it) comes
   * after a run has started.
   */
  public readonly firstPlannerRun: FirstRunTrigger;

  constructor(scope: Construct, id: string, props: CompactionProps) {
    super(scope, id);
    const { bucket } = props;

    this.deadLetterQueue = failureQueue(this, 'DeadLetterQueue', { fifo: true, holds: 'the slices that failed every retry of the compaction queue' });
    this.queue = new Queue(this, 'Queue', {
      fifo: true,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: COMPACTION_VISIBILITY_TIMEOUT,
      // Past the raw retention a message is moot: the next plan sends what is still pending.
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: COMPACTION_MAX_RECEIVE_COUNT },
    });

    this.planner = new HouseFunction(this, 'Planner', {
      projectRoot: props.projectRoot,
      entry: props.plannerEntry,
      description: 'Finds hours of landed Parquet with data not compacted yet and queues one compaction per organization and hour',
      serviceName: SERVICE_NAMES.compaction,
      metricsNamespace: props.metricsNamespace,
      logRetention: props.logRetention,
      // Holds the raw listing (three days of objects) of 4 organizations at a time, ~1 KB per object: ~200 MB
      // for an organization sending 10 batches/s (docs/landing.md "Deployed: planner, queue, workers").
      memorySize: 2048,
      timeout: Duration.minutes(15),
      // No reservation unless asked for (lib/config.ts): a reservation fails the deploy on accounts with a low concurrency quota.
      ...(props.settings.plannerReservedConcurrency === undefined ? {} : { reservedConcurrentExecutions: props.settings.plannerReservedConcurrency }),
      environment: { [ENV.dataBucket]: bucket.bucketName, [ENV.compactionQueueUrl]: this.queue.queueUrl, [ENV.tenancyTable]: props.tenancyTable.tableName },
    });
    this.grantPlanner(bucket);
    // Lambda retries a failed asynchronous invocation twice by default; EventBridge's retryAttempts covers only the
    // delivery (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html). The next scheduled
    // run plans whatever is still pending, so a failed run is not retried, and one failure is one alarm datapoint.
    this.planner.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(15) });

    this.worker = new HouseFunction(this, 'Worker', {
      projectRoot: props.projectRoot,
      entry: props.workerEntry,
      description: 'Compacts one organization hour of landed Parquet into few deduplicated objects',
      serviceName: SERVICE_NAMES.compaction,
      metricsNamespace: props.metricsNamespace,
      logRetention: props.logRetention,
      // One hash part (at most 250,000 input rows and 32 MiB of input Parquet) is held at a time, and one upload part
      // of the object it goes into: ~1 GB for a 1M-span hour.
      memorySize: 3008,
      timeout: COMPACTION_WORKER_TIMEOUT,
      // --expose-gc: compaction collects the previous part's rows before reading the next (see `collectGarbage`).
      // The queue URL only for ChangeMessageVisibility of failed slices, which the event source's grant allows.
      environment: { [ENV.dataBucket]: bucket.bucketName, [ENV.compactionQueueUrl]: this.queue.queueUrl, [ENV.tenancyTable]: props.tenancyTable.tableName, NODE_OPTIONS: COMPACTION_NODE_OPTIONS },
    });
    this.grantWorker(bucket);
    this.grantErasure(bucket, props.tenancyTable);

    this.eventSource = new SqsEventSource(this.queue, {
      // One slice per invocation: the timeout is sized for one large hour.
      batchSize: 1,
      reportBatchItemFailures: true,
      maxConcurrency: props.settings.maxConcurrency,
    });
    this.worker.addEventSource(this.eventSource);

    this.schedule = new Rule(this, 'Schedule', {
      description: 'Plans trace compaction',
      schedule: Schedule.rate(Duration.minutes(15)),
    });
    // No retries: the next scheduled run plans whatever is still pending.
    this.schedule.addTarget(new LambdaFunction(this.planner, { retryAttempts: 0, maxEventAge: Duration.minutes(15) }));

    // Once, and asynchronous: on a new stack the bucket is empty and the run takes seconds, on an upgraded one it
    // takes what the bucket's listing takes, and the update does not wait for it (docs/deploy.md "Upgrading").
    this.firstPlannerRun = new FirstRunTrigger(this, 'FirstPlannerRun', { handler: this.planner, logRetention: props.logRetention });
    this.firstPlannerRun.executeAfter(this.queue);
    // The trigger names the planner's version; the schedule, the only resource-based permission, invokes the function itself.
    Annotations.of(this.planner).acknowledgeWarning('@aws-cdk/aws-lambda:addPermissionsToVersionOrAlias', 'the schedule invokes the unqualified planner; only the first-run trigger names its version');
  }

  /**
   * The planner lists the raw prefixes, reads manifests and sends to the queue; it reads no data. The only objects
   * it writes are the part plans of slices too large for one worker (lambda/lake/lifecycle/part-plan.ts), which it
   * also reads back to send a plan again.
   */
  private grantPlanner(bucket: Bucket): void {
    const { manifests, partPlans } = COMPACTION_PREFIXES;
    // Unconditional on purpose, as for the worker below: without s3:ListBucket a slice's missing manifest is a 403.
    this.planner.addToRolePolicy(new PolicyStatement({ actions: ['s3:ListBucket'], resources: [bucket.bucketArn] }));
    this.planner.addToRolePolicy(new PolicyStatement({ actions: ['s3:GetObject'], resources: [manifests, partPlans].map((prefix) => bucket.arnForObjects(`${prefix}*`)) }));
    this.planner.addToRolePolicy(new PolicyStatement({ actions: ['s3:PutObject'], resources: [bucket.arnForObjects(`${partPlans}*`)] }));
    // SendMessageBatch is authorized as sqs:SendMessage; SSE-SQS needs no KMS grant.
    this.planner.addToRolePolicy(new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.queue.queueArn] }));
    acknowledgePrefixWildcards(
      this.planner.role ?? this.planner,
      bucket,
      [manifests, partPlans],
      'Manifest and part plan keys (org, date, hour, generation) are chosen at run time; the planner may only read manifests and part plans, and write part plans.',
    );
  }

  /**
   * What erasure adds (lambda/erasure/): both functions read and write the erasure records (requests,
   * per-hour outcomes, the hour index) and read, or create once, the stack's secret in the tenancy table; the
   * worker also deletes the raw and overflow objects that hold an erased trace.
   */
  private grantErasure(bucket: Bucket, tenancyTable: ITable): void {
    const { erasures, overflow, traces, spans } = DATA_PREFIXES;
    for (const fn of [this.planner, this.worker]) {
      fn.addToRolePolicy(new PolicyStatement({ actions: ['s3:GetObject', 's3:PutObject'], resources: [bucket.arnForObjects(`${erasures}*`)] }));
      // The erasure secret alone: its item's partition key, not the organizations and API keys beside it
      // (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html, dynamodb:LeadingKeys).
      fn.addToRolePolicy(
        new PolicyStatement({
          actions: ['dynamodb:GetItem', 'dynamodb:PutItem'],
          resources: [tenancyTable.tableArn],
          conditions: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [tenancyKeys.erasureSecret().pk] } },
        }),
      );
    }
    // Raw and overflow objects that hold an erased trace; the hour index of an hour past retention.
    this.worker.addToRolePolicy(
      new PolicyStatement({ actions: ['s3:DeleteObject'], resources: [traces, spans, overflow, `${erasures}index/`].map((prefix) => bucket.arnForObjects(`${prefix}*`)) }),
    );
    const reason = 'Erasure record keys (org, request, hour) and the raw and overflow objects an erasure deletes are chosen at run time.';
    acknowledgePrefixWildcards(this.planner.role ?? this.planner, bucket, [erasures], reason);
    // The worker's grants on traces/ and spans/ are acknowledged with its compaction grants.
    acknowledgePrefixWildcards(this.worker.role ?? this.worker, bucket, [erasures, overflow, `${erasures}index/`], reason);
  }

  /**
   * The worker's data grants, all in one place: it lists the bucket, reads raw and compacted objects and
   * manifests, writes compacted objects (one PUT, or a multipart upload it may abort) and manifests, and deletes
   * compacted objects (raw objects expire by lifecycle, never by compaction), and, for an hour past its
   * organization's retention, its raw objects and manifest. The event source adds the queue's receive and delete actions.
   */
  private grantWorker(bucket: Bucket): void {
    const { traces, spans, compacted, manifests } = COMPACTION_PREFIXES;
    // Unconditional on purpose: S3 answers a GET of a missing key with 404 NoSuchKey only when the caller
    // holds s3:ListBucket, and a GetObject carries no s3:prefix, so a prefix-conditioned grant would turn
    // every hour's first "no manifest yet" into 403 AccessDenied and fail its compaction.
    this.worker.addToRolePolicy(new PolicyStatement({ actions: ['s3:ListBucket'], resources: [bucket.bucketArn] }));
    this.worker.addToRolePolicy(new PolicyStatement({ actions: ['s3:GetObject'], resources: [traces, spans, compacted, manifests].map((prefix) => bucket.arnForObjects(`${prefix}*`)) }));
    this.worker.addToRolePolicy(new PolicyStatement({ actions: ['s3:PutObject'], resources: [compacted, manifests].map((prefix) => bucket.arnForObjects(`${prefix}*`)) }));
    // s3:PutObject covers CreateMultipartUpload, UploadPart and CompleteMultipartUpload; aborting a failed upload
    // of a compacted object is its own action.
    this.worker.addToRolePolicy(new PolicyStatement({ actions: ['s3:AbortMultipartUpload', 's3:DeleteObject'], resources: [bucket.arnForObjects(`${compacted}*`)] }));
    // An hour past its organization's retention is deleted by the worker, in the hour's message group
    // (lambda/lake/lifecycle/expire-hour.ts): its raw objects and its manifest too.
    this.worker.addToRolePolicy(new PolicyStatement({ actions: ['s3:DeleteObject'], resources: [traces, spans, manifests].map((prefix) => bucket.arnForObjects(`${prefix}*`)) }));
    acknowledgePrefixWildcards(
      this.worker.role ?? this.worker,
      bucket,
      [traces, spans, compacted, manifests],
      'Object keys (org, date, hour, generation) are chosen at run time; the grants are limited to the prefixes compaction reads or writes.',
    );
    // A switch still waiting for its parts is sent again as a fresh message before its receives run out (SSE-SQS: no KMS grant).
    this.queue.grantSendMessages(this.worker);
  }
}
