import { Duration } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Bucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { ENV } from '../../lambda/shared/runtime/env-names.js';
import { acknowledgePrefixWildcards } from './acknowledge.js';
import { HouseFunction } from './house-function.js';

/** Key prefixes compaction reads or writes; raw ones are the landing's. */
export const COMPACTION_PREFIXES = { traces: 'traces/', spans: 'spans/', compacted: 'compacted/', manifests: 'manifests/' } as const;

/** The compaction function's Node flags: the house's source maps, and `gc()` for `collectGarbage`. */
export const COMPACTION_NODE_OPTIONS = '--enable-source-maps --expose-gc';

export interface CompactionProps {
  readonly projectRoot: string;
  readonly entry: string;
  readonly bucket: Bucket;
  readonly logRetention: RetentionDays;
  readonly metricsNamespace: string;
  /** How often closed hours are compacted. */
  readonly every?: Duration;
}

/**
 * The compaction function on an EventBridge schedule. One run at a time (reserved concurrency 1): two runs
 * compacting one slice could each delete the other's new objects as unreferenced. Least privilege: it lists
 * the bucket under its four prefixes only, reads raw and compacted objects and manifests, writes compacted
 * objects (one PUT, or a multipart upload it may abort) and manifests, and deletes compacted objects (raw objects
 * expire by lifecycle, never by compaction).
 */
export class Compaction extends Construct {
  public readonly function: HouseFunction;
  public readonly schedule: Rule;

  constructor(scope: Construct, id: string, props: CompactionProps) {
    super(scope, id);
    const { bucket } = props;
    this.function = new HouseFunction(this, 'Function', {
      projectRoot: props.projectRoot,
      entry: props.entry,
      description: 'Compacts closed hours of landed Parquet into few deduplicated objects per organization and hour',
      serviceName: 'trace-compaction',
      metricsNamespace: props.metricsNamespace,
      logRetention: props.logRetention,
      // One hash part (at most 250,000 input rows and 32 MiB of input Parquet) is held at a time, and one upload part
      // of the object it goes into: ~1 GB for a 1M-span hour.
      memorySize: 3008,
      timeout: Duration.minutes(15),
      reservedConcurrentExecutions: 1,
      // --expose-gc: compaction collects the previous part's rows before reading the next (see `collectGarbage`).
      environment: { [ENV.dataBucket]: bucket.bucketName, NODE_OPTIONS: COMPACTION_NODE_OPTIONS },
    });
    const { traces, spans, compacted, manifests } = COMPACTION_PREFIXES;
    // Unconditional on purpose: S3 answers a GET of a missing key with 404 NoSuchKey only when the caller
    // holds s3:ListBucket, and a GetObject carries no s3:prefix, so a prefix-conditioned grant would turn
    // every hour's first "no manifest yet" into 403 AccessDenied and fail its compaction.
    this.function.addToRolePolicy(new PolicyStatement({ actions: ['s3:ListBucket'], resources: [bucket.bucketArn] }));
    this.function.addToRolePolicy(new PolicyStatement({ actions: ['s3:GetObject'], resources: [traces, spans, compacted, manifests].map((prefix) => bucket.arnForObjects(`${prefix}*`)) }));
    this.function.addToRolePolicy(new PolicyStatement({ actions: ['s3:PutObject'], resources: [compacted, manifests].map((prefix) => bucket.arnForObjects(`${prefix}*`)) }));
    // s3:PutObject covers CreateMultipartUpload, UploadPart and CompleteMultipartUpload; aborting a failed upload
    // of a compacted object is its own action.
    this.function.addToRolePolicy(new PolicyStatement({ actions: ['s3:AbortMultipartUpload', 's3:DeleteObject'], resources: [bucket.arnForObjects(`${compacted}*`)] }));
    acknowledgePrefixWildcards(
      this.function.role ?? this.function,
      bucket,
      [traces, spans, compacted, manifests],
      'Object keys (org, date, hour, generation) are chosen at run time; the grants are limited to the prefixes compaction reads or writes.',
    );

    this.schedule = new Rule(this, 'Schedule', {
      description: 'Runs trace compaction',
      schedule: Schedule.rate(props.every ?? Duration.minutes(15)),
    });
    // No retries: the next scheduled run picks up whatever this one left pending.
    this.schedule.addTarget(new LambdaFunction(this.function, { retryAttempts: 0, maxEventAge: Duration.minutes(15) }));
  }
}
