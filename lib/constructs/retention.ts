import { Duration } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Bucket } from 'aws-cdk-lib/aws-s3';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ENV } from '../../lambda/shared/runtime/env-names.js';
import { DATA_PREFIXES, SERVICE_NAMES } from '../../lambda/shared/service-constants.js';
import { ORGANIZATIONS_INDEX, PLANS_PARTITION } from '../../lambda/shared/tables.js';
import { acknowledgePrefixWildcards } from './acknowledge.js';
import { HouseFunction } from './house-function.js';

/** How often the sweep runs: an hour is deleted within about an hour of passing its retention (docs/operations.md "Retention"). */
export const RETENTION_SWEEP_INTERVAL = Duration.hours(1);

export interface RetentionProps {
  readonly projectRoot: string;
  /** Handler file relative to `projectRoot`. */
  readonly entry: string;
  readonly bucket: Bucket;
  readonly tenancyTable: ITable;
  /** The compaction queue: every hour's deletion goes through its message group there, never beside a compaction of it. */
  readonly compactionQueue: IQueue;
  /** The stack's `dataRetentionDays`: the ceiling over every plan and organization. */
  readonly dataRetentionDays?: number;
  readonly logRetention: RetentionDays;
  readonly metricsNamespace: string;
}

/**
 * Retention per plan and organization: an hourly EventBridge rule runs the sweeper, which reads every
 * organization's retention from the tenancy table, lists each one's hours past it (listings that stop at the first
 * hour kept) and queues their deletion on the compaction queue, where a worker deletes them in the hour's message
 * group (raw objects, then the manifest, then, a run later, the compacted objects). It deletes overflow objects
 * (by the day) itself. Nothing is rewritten.
 */
export class Retention extends Construct {
  public readonly sweeper: HouseFunction;
  public readonly schedule: Rule;

  constructor(scope: Construct, id: string, props: RetentionProps) {
    super(scope, id);
    const { bucket } = props;
    this.sweeper = new HouseFunction(this, 'Sweeper', {
      projectRoot: props.projectRoot,
      entry: props.entry,
      description: 'Finds the hours past each organization\'s retention and queues their deletion; deletes overflow objects past it',
      serviceName: SERVICE_NAMES.retention,
      metricsNamespace: props.metricsNamespace,
      logRetention: props.logRetention,
      // Holds one organization's expired keys at a time: after the first run, about an hour of them.
      memorySize: 512,
      timeout: Duration.minutes(15),
      environment: {
        [ENV.dataBucket]: bucket.bucketName,
        [ENV.tenancyTable]: props.tenancyTable.tableName,
        [ENV.compactionQueueUrl]: props.compactionQueue.queueUrl,
        ...(props.dataRetentionDays === undefined ? {} : { [ENV.dataRetentionDays]: String(props.dataRetentionDays) }),
      },
    });
    this.grantSweeper(props);
    // No retries by Lambda's asynchronous invocation or EventBridge: the next hourly run finds what is still there.
    this.sweeper.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(15) });
    this.schedule = new Rule(this, 'Schedule', { description: 'Sweeps data past each organization\'s retention', schedule: Schedule.rate(RETENTION_SWEEP_INTERVAL) });
    this.schedule.addTarget(new LambdaFunction(this.sweeper, { retryAttempts: 0, maxEventAge: Duration.minutes(15) }));
  }

  /**
   * The sweeper's grants, all in one place: it scans the organizations' index and queries the plans' partition of
   * the tenancy table (no writes, no key items, never the erasure secret), lists the bucket, deletes only overflow
   * objects, and sends to the compaction queue; the deletes of an hour's raw, manifest and compacted objects are the
   * compaction worker's.
   */
  private grantSweeper({ bucket, tenancyTable, compactionQueue }: RetentionProps): void {
    // A Scan names no partition, so no dynamodb:LeadingKeys condition limits it: it is granted on the index alone,
    // an ARN of its own (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/iam-policy-specific-table-indexes.html),
    // which holds organizations only (lambda/shared/tables.ts).
    this.sweeper.addToRolePolicy(new PolicyStatement({ actions: ['dynamodb:Scan'], resources: [`${tenancyTable.tableArn}/index/${ORGANIZATIONS_INDEX}`] }));
    this.sweeper.addToRolePolicy(
      new PolicyStatement({
        actions: ['dynamodb:Query'],
        resources: [tenancyTable.tableArn],
        // https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html
        conditions: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [PLANS_PARTITION] } },
      }),
    );
    this.sweeper.addToRolePolicy(new PolicyStatement({ actions: ['s3:ListBucket'], resources: [bucket.bucketArn] }));
    this.sweeper.addToRolePolicy(new PolicyStatement({ actions: ['s3:DeleteObject'], resources: [bucket.arnForObjects(`${DATA_PREFIXES.overflow}*`)] }));
    // SendMessageBatch is authorized as sqs:SendMessage; SSE-SQS needs no KMS grant.
    this.sweeper.addToRolePolicy(new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [compactionQueue.queueArn] }));
    acknowledgePrefixWildcards(this.sweeper.role ?? this.sweeper, bucket, [DATA_PREFIXES.overflow], 'Overflow keys (org, day, request) are chosen at run time; the sweeper may only delete overflow objects.');
  }
}
