/**
 * List prices the cost model bills with: **us-east-1 (N. Virginia)**, on-demand / pay-as-you-go, first tier of
 * each tiered price, as published on the pages cited beside each line. This machine reaches no AWS page, so
 * they were not re-checked when the model was written (2026-11-25): check them for your region and date.
 */
export const PRICES = {
  /** https://aws.amazon.com/api-gateway/pricing/ — REST APIs, first 333 million requests a month. */
  apiGatewayRestPerRequest: 3.5 / 1e6,
  /** https://aws.amazon.com/lambda/pricing/ — requests, any architecture. */
  lambdaPerRequest: 0.2 / 1e6,
  /** https://aws.amazon.com/lambda/pricing/ — Arm (Graviton) duration, first 7.5 billion GB-seconds a month. */
  lambdaArmPerGbSecond: 0.0000133334,
  /** https://aws.amazon.com/kinesis/data-streams/pricing/ — provisioned: shard hour. */
  kinesisShardHour: 0.015,
  /** Same page — provisioned: per million PUT payload units (a record is one unit per 25 KB, rounded up). */
  kinesisPutPayloadUnit: 0.014 / 1e6,
  /** Same page — on-demand: stream hour. */
  kinesisOnDemandStreamHour: 0.04,
  /** Same page — on-demand: data in per GB (each record rounded up to a whole KB). */
  kinesisOnDemandInPerGb: 0.08,
  /** Same page — on-demand: data retrieved per GB (one consumer reads everything once). */
  kinesisOnDemandOutPerGb: 0.04,
  /** https://aws.amazon.com/dynamodb/pricing/on-demand/ — per write request unit (1 KB; 2 per item in a transaction). */
  dynamoWriteRequestUnit: 0.625 / 1e6,
  /** Same page — per read request unit (4 KB strongly consistent; half a unit eventually consistent). */
  dynamoReadRequestUnit: 0.125 / 1e6,
  /** https://aws.amazon.com/s3/pricing/ — S3 Standard: PUT, COPY, POST, LIST (multipart calls are PUTs). DELETE is free. */
  s3PutOrList: 0.005 / 1000,
  /** Same page — S3 Standard: GET, SELECT and all other requests (a ranged GET is one GET). */
  s3Get: 0.0004 / 1000,
  /** Same page — S3 Standard storage, first 50 TB, per GB-month. */
  s3StandardGbMonth: 0.023,
  /** https://aws.amazon.com/athena/pricing/ — per TB scanned, rounded up to the megabyte, at least 10 MB per query. */
  athenaPerTbScanned: 5,
  athenaMinimumBytesPerQuery: 10 * 1024 * 1024,
  /** https://aws.amazon.com/sqs/pricing/ — FIFO queue requests (each 64 KB chunk of a request is one request). */
  sqsFifoPerRequest: 0.5 / 1e6,
  /** https://aws.amazon.com/cloudwatch/pricing/ — logs ingested (standard class), per GB. */
  cloudWatchLogsPerGb: 0.5,
  /** Same page — a standard-resolution alarm on one metric, per month. */
  cloudWatchAlarmMonth: 0.1,
  /** Same page — a dashboard, per month. */
  cloudWatchDashboardMonth: 3,
  /** Same page — a custom metric, first 10,000, per month (prorated by the hour it receives data). */
  cloudWatchCustomMetricMonth: 0.3,
} as const;

/** The hours AWS bills as one month. */
export const HOURS_PER_MONTH = 730;

/**
 * Lambda gives a function CPU in proportion to its memory: one full vCPU at 1,769 MB
 * (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html). A single-threaded handler measured at
 * one core here runs `1769 / memory` times longer below that size.
 */
export const LAMBDA_MB_PER_VCPU = 1769;

/** Kinesis limits per shard (https://docs.aws.amazon.com/streams/latest/dev/service-sizes-and-limits.html): 1 MiB/s or 1,000 records/s in. */
export const KINESIS_SHARD_LIMITS = { bytesPerSecond: 1024 * 1024, recordsPerSecond: 1000 } as const;
