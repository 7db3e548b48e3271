import { Duration } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  MathExpression,
  Metric,
  type IMetric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IStream } from 'aws-cdk-lib/aws-kinesis';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { INVALID_RETENTION_METRIC, METRICS_NAMESPACE, SERVICE_NAMES } from '../../lambda/shared/service-constants.js';

export interface MonitoringProps {
  readonly api: RestApi;
  readonly ingestFunction: IFunction;
  readonly consumer: IFunction;
  readonly compaction: CompactionResources;
  /** The scheduled retention sweep (lib/constructs/retention.ts), when the stack has one. */
  readonly retentionSweeper?: IFunction;
  readonly tenancyTable: ITable;
  readonly rateTable: ITable;
  readonly stream: IStream;
  readonly failureQueue: IQueue;
  /** Count of 429 answers, from the access log. */
  readonly throttledResponses: IMetric;
  readonly alarmEmail?: string;
}

/** The parts of the compaction fan-out that are watched. */
export interface CompactionResources {
  readonly planner: IFunction;
  readonly worker: IFunction;
  readonly queue: IQueue;
  readonly deadLetterQueue: IQueue;
}

/** Age of the oldest queued slice past which compaction is falling behind: four planner runs. */
export const COMPACTION_BACKLOG_ALARM_AGE = Duration.hours(1);

const FIVE_MINUTES = Duration.minutes(5);

/** Where each alarm's runbook lives: a section of this document per alarm, titled with the alarm's id. */
export const RUNBOOK_DOCUMENT = 'docs/operations.md';

/** The link an alarm's description ends with: the runbook section whose heading is the alarm's id. */
export function runbookLink(alarmId: string): string {
  return `${RUNBOOK_DOCUMENT}#${alarmId.toLowerCase()}`;
}

/** Dashboard and alarms of the whole path; every alarm notifies one SNS topic. */
export class Monitoring extends Construct {
  public readonly topic: Topic;
  public readonly dashboard: Dashboard;
  public readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    // Unencrypted on purpose: CloudWatch cannot publish to a topic under the AWS-managed SNS key,
    // and alarm notifications carry only alarm names and states.
    this.topic = new Topic(this, 'AlarmTopic', { displayName: 'Trace Ingest alarms', enforceSSL: true });
    if (props.alarmEmail !== undefined) this.topic.addSubscription(new EmailSubscription(props.alarmEmail));

    const { api, ingestFunction, consumer, stream, failureQueue } = props;
    const requests = api.metricCount({ period: FIVE_MINUTES, statistic: 'Sum' });
    const clientErrorRate = api.metricClientError({ period: FIVE_MINUTES, statistic: 'Average' });
    const serverErrors = api.metricServerError({ period: FIVE_MINUTES, statistic: 'Sum' });
    const latencyP99 = api.metricLatency({ period: FIVE_MINUTES, statistic: 'p99' });
    const throttledRate = new MathExpression({
      expression: 'IF(requests > 0, throttled / requests, 0)',
      usingMetrics: { requests, throttled: props.throttledResponses },
      period: FIVE_MINUTES,
      label: 'Share of requests answered 429',
    });
    const ingestErrors = ingestFunction.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' });
    const tableThrottles = (table: ITable, idPrefix: string, label: string) =>
      new MathExpression({
        expression: `${idPrefix}Reads + ${idPrefix}Writes`,
        usingMetrics: {
          [`${idPrefix}Reads`]: table.metric('ReadThrottleEvents', { period: FIVE_MINUTES, statistic: 'Sum' }),
          [`${idPrefix}Writes`]: table.metric('WriteThrottleEvents', { period: FIVE_MINUTES, statistic: 'Sum' }),
        },
        period: FIVE_MINUTES,
        label,
      });
    const tenancyThrottles = tableThrottles(props.tenancyTable, 'tenancy', 'Tenancy table throttled requests');
    const rateThrottles = tableThrottles(props.rateTable, 'rate', 'Rate table throttled requests');
    const transactionConflicts = props.rateTable.metric('TransactionConflict', { period: FIVE_MINUTES, statistic: 'Sum' });
    const streamThrottles = stream.metricPutRecordsThrottledRecords({ period: FIVE_MINUTES, statistic: 'Sum' });
    const iteratorAge = new Metric({
      namespace: 'AWS/Lambda',
      metricName: 'IteratorAge',
      dimensionsMap: { FunctionName: consumer.functionName },
      period: FIVE_MINUTES,
      statistic: 'Maximum',
    });
    const consumerErrors = consumer.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' });
    const failureDepth = failureQueue.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum' });

    this.alarm('ApiServerErrors', serverErrors, 5, 1, 'API answered 5xx at least 5 times in 5 minutes');
    this.alarm('ApiClientErrorRate', clientErrorRate, 0.25, 3, 'More than 25% of API requests answered 4xx for 15 minutes');
    this.alarm('ApiLatencyP99', latencyP99, 10_000, 3, 'API p99 latency above 10 s for 15 minutes');
    this.alarm('IngestFunctionErrors', ingestErrors, 1, 1, 'The ingest function failed (crash or timeout): the contract says no input produces a 500');
    this.alarm('Ingest429Rate', throttledRate, 0.1, 3, 'More than 10% of requests answered 429 for 15 minutes');
    this.alarm('TenancyTableThrottles', tenancyThrottles, 1, 1, 'DynamoDB throttled requests on the tenancy table');
    this.alarm('RateTableThrottles', rateThrottles, 1, 1, 'DynamoDB throttled requests on the rate table');
    this.alarm('RateTransactionConflicts', transactionConflicts, 50, 3, 'Many rate-counter transactions conflicting for 15 minutes (one organization sending concurrently)');
    this.alarm('StreamWriteThrottles', streamThrottles, 1, 1, 'Kinesis throttled PutRecords records');
    this.alarm('ConsumerIteratorAge', iteratorAge, 15 * 60 * 1000, 3, 'The consumer is more than 15 minutes behind the stream');
    this.alarm('ConsumerErrors', consumerErrors, 1, 1, 'The landing consumer failed a batch (it will be retried, bisected, then sent to the failure queue)');
    const { planner, worker, queue: compactionQueue, deadLetterQueue: compactionDlq } = props.compaction;
    const plannerErrors = planner.metricErrors({ period: Duration.hours(1), statistic: 'Sum' });
    const plannerRuns = planner.metricInvocations({ period: Duration.hours(1), statistic: 'Sum' });
    const workerErrors = worker.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' });
    const compactionMetric = (metricName: string, period: Duration) => new Metric({ namespace: METRICS_NAMESPACE, metricName, dimensionsMap: { service: SERVICE_NAMES.compaction }, period, statistic: 'Sum' });
    const slicesFailed = compactionMetric('SlicesFailed', Duration.hours(1));
    const backlogAge = compactionQueue.metricApproximateAgeOfOldestMessage({ period: FIVE_MINUTES, statistic: 'Maximum' });
    const backlogDepth = compactionQueue.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum' });
    const deadSlices = compactionDlq.metricApproximateNumberOfMessagesVisible({ period: FIVE_MINUTES, statistic: 'Maximum' });
    this.alarm('CompactionPlannerErrors', plannerErrors, 2, 1, 'Compaction planning failed twice within an hour: new and late data stays on raw objects (duplicates possible) until a plan succeeds');
    this.alarm('CompactionWorkerErrors', workerErrors, 1, 1, 'A compaction worker crashed or timed out (a slice too large for one invocation?); SQS retries the slice');
    this.alarm('CompactionSlicesFailed', slicesFailed, 1, 2, 'Some hours failed to compact for two hours in a row');
    this.alarm(
      'CompactionBacklogAge',
      backlogAge,
      COMPACTION_BACKLOG_ALARM_AGE.toSeconds(),
      3,
      'A slice has waited in the compaction queue for over an hour for 15 minutes: workers are not keeping up (raise compactionMaxConcurrency) or a slice is being retried',
    );
    this.alarm('CompactionDeadLetters', deadSlices, 1, 1, 'An organization-hour failed every compaction retry. It is read from its raw objects meanwhile, which expire 3 days after landing: fix the cause (the worker log says it) before then. No redrive is needed: the planner queues the hour again.');
    // Below one run, and no data counts: no data is exactly the failure this alarm is for (the schedule stopped invoking the planner).
    this.alarm('CompactionNotRunning', plannerRuns, 1, 2, 'The compaction schedule has not run for two hours', {
      comparison: ComparisonOperator.LESS_THAN_THRESHOLD,
      missingData: TreatMissingData.BREACHING,
    });
    if (props.retentionSweeper) {
      const sweepErrors = props.retentionSweeper.metricErrors({ period: Duration.hours(1), statistic: 'Sum' });
      this.alarm('RetentionSweepErrors', sweepErrors, 1, 2, 'The retention sweep failed two hourly runs in a row: data past its organization\'s retention is kept until a run succeeds');
      // Each hourly run publishes the count, 0 included: the largest in the hour is the last run's (a doubled run
      // counts the same organizations). An hour without a run keeps the state ("IGNORE: The current alarm state is
      // maintained", https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.aws_cloudwatch.TreatMissingData.html;
      // https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html, "Configuring how
      // CloudWatch alarms treat missing data"): a run that slips past the hour's end does not clear a value still stored.
      const invalidRetention = new Metric({ namespace: METRICS_NAMESPACE, metricName: INVALID_RETENTION_METRIC, dimensionsMap: { service: SERVICE_NAMES.retention }, period: Duration.hours(1), statistic: 'Maximum' });
      this.alarm(
        'RetentionInvalidSetting',
        invalidRetention,
        1,
        1,
        'An organization\'s or its plan\'s stored retention_days is not a retention (0, negative, fractional, over 36500, not a number): the retention sweep deletes nothing of that organization until it is fixed',
        { missingData: TreatMissingData.IGNORE },
      );
    }
    this.alarm('FailureQueueNotEmpty', failureDepth, 1, 1, 'Stream batches the consumer gave up on: replay them before the stream retention runs out');

    this.dashboard = new Dashboard(this, 'Dashboard', {
      defaultInterval: Duration.hours(3),
      widgets: [
        [new AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24 })],
        [
          graph('API requests', [requests], [serverErrors]),
          graph('API 4xx rate and 429 share', [clientErrorRate, throttledRate]),
          graph('API latency', [api.metricLatency({ period: FIVE_MINUTES, statistic: 'p50' }), latencyP99, api.metricIntegrationLatency({ period: FIVE_MINUTES, statistic: 'p99' })]),
        ],
        [
          graph('Ingest function', [ingestFunction.metricInvocations({ period: FIVE_MINUTES }), ingestErrors, ingestFunction.metricThrottles({ period: FIVE_MINUTES })]),
          graph('Ingest duration', [ingestFunction.metricDuration({ period: FIVE_MINUTES, statistic: 'p50' }), ingestFunction.metricDuration({ period: FIVE_MINUTES, statistic: 'p99' })]),
          graph('DynamoDB throttles and conflicts', [tenancyThrottles, rateThrottles, transactionConflicts]),
        ],
        [
          graph('Stream', [stream.metricIncomingRecords({ period: FIVE_MINUTES, statistic: 'Sum' }), streamThrottles], [stream.metricIncomingBytes({ period: FIVE_MINUTES, statistic: 'Sum' })]),
          graph('Consumer', [consumer.metricInvocations({ period: FIVE_MINUTES }), consumerErrors, failureDepth], [iteratorAge]),
          graph('Consumer duration', [consumer.metricDuration({ period: FIVE_MINUTES, statistic: 'p50' }), consumer.metricDuration({ period: FIVE_MINUTES, statistic: 'Maximum' })]),
        ],
        [
          graph('Compaction queue', [backlogDepth, compactionQueue.metricApproximateNumberOfMessagesNotVisible({ period: FIVE_MINUTES, statistic: 'Maximum' }), deadSlices], [backlogAge]),
          graph('Compaction slices', [compactionMetric('SlicesPlanned', FIVE_MINUTES), compactionMetric('SlicesCompacted', FIVE_MINUTES), compactionMetric('SlicesFailed', FIVE_MINUTES)], [compactionMetric('RowsCompacted', FIVE_MINUTES)]),
          graph('Compaction workers', [worker.metricInvocations({ period: FIVE_MINUTES }), workerErrors, worker.metricThrottles({ period: FIVE_MINUTES })], [worker.metricDuration({ period: FIVE_MINUTES, statistic: 'Maximum' })]),
        ],
      ],
    });
  }

  /** An alarm at `threshold` or above (unless `comparison` says otherwise) for `periods` periods, to the topic on alarm and on OK. */
  private alarm(
    id: string,
    metric: IMetric,
    threshold: number,
    periods: number,
    description: string,
    { comparison = ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, missingData = TreatMissingData.NOT_BREACHING } = {},
  ): Alarm {
    const alarm = new Alarm(this, id, {
      metric,
      threshold,
      evaluationPeriods: periods,
      datapointsToAlarm: periods,
      comparisonOperator: comparison,
      treatMissingData: missingData,
      alarmDescription: `${description} Runbook: ${runbookLink(id)}`,
    });
    alarm.addAlarmAction(new SnsAction(this.topic));
    alarm.addOkAction(new SnsAction(this.topic));
    this.alarms.push(alarm);
    return alarm;
  }
}

function graph(title: string, left: IMetric[], right: IMetric[] = []): GraphWidget {
  return new GraphWidget({ title, left, right, width: 8 });
}
