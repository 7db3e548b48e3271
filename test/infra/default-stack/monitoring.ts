import { Match } from 'aws-cdk-lib/assertions';
import { INVALID_RETENTION_METRIC, SERVICE_NAMES } from '../../../lambda/shared/service-constants.js';
import { runbookLink } from '../../../lib/constructs/monitoring.js';
import { defaultStack } from '../support/synth-stack.js';

describe('Monitoring', () => {
  const { stack, template } = defaultStack();
  const topicRef = { Ref: stack.getLogicalId(stack.monitoring.topic.node.defaultChild as never) };
  const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as { Properties: AlarmProperties }[];
  const metricNamesOf = (alarm: AlarmProperties): string[] =>
    alarm.MetricName !== undefined ? [alarm.MetricName] : (alarm.Metrics ?? []).flatMap((metric) => (metric.MetricStat ? [metric.MetricStat.Metric.MetricName] : []));

  it.each([
    ['API 5xx', 'AWS/ApiGateway', ['5XXError']],
    ['API 4xx', 'AWS/ApiGateway', ['4XXError']],
    ['API latency', 'AWS/ApiGateway', ['Latency']],
    ['ingest errors', 'AWS/Lambda', ['Errors']],
    ['429 rate', 'TraceIngest', ['Count', 'Responses429']],
    ['DynamoDB throttles', 'AWS/DynamoDB', ['ReadThrottleEvents', 'WriteThrottleEvents']],
    ['transaction conflicts', 'AWS/DynamoDB', ['TransactionConflict']],
    ['Kinesis write throttles', 'AWS/Kinesis', ['PutRecords.ThrottledRecords']],
    ['consumer iterator age', 'AWS/Lambda', ['IteratorAge']],
    ['failure queue depth', 'AWS/SQS', ['ApproximateNumberOfMessagesVisible']],
    ['compaction backlog age', 'AWS/SQS', ['ApproximateAgeOfOldestMessage']],
  ])('alarms on %s', (_name, _namespace, metricNames) => {
    expect(alarms.some((alarm) => metricNames.every((name) => metricNamesOf(alarm.Properties).includes(name)))).toBe(true);
  });

  it('alarms on errors of every function', () => {
    const errorAlarms = alarms.filter((alarm) => alarm.Properties.MetricName === 'Errors');
    const functions = errorAlarms.map((alarm) => JSON.stringify(alarm.Properties.Dimensions));
    expect(functions).toEqual(
      expect.arrayContaining([
        expect.stringContaining(stack.getLogicalId(stack.ingest.handler.node.defaultChild as never)),
        expect.stringContaining(stack.getLogicalId(stack.landing.consumer.node.defaultChild as never)),
        expect.stringContaining(stack.getLogicalId(stack.compaction.planner.node.defaultChild as never)),
        expect.stringContaining(stack.getLogicalId(stack.compaction.worker.node.defaultChild as never)),
      ]),
    );
  });

  it('notifies the alarm topic on alarm and on recovery, and treats missing data as fine except where it is the failure or says nothing', () => {
    expect(alarms.length).toBeGreaterThanOrEqual(15);
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([topicRef]);
      expect(alarm.Properties.OKActions).toEqual([topicRef]);
      const description = alarm.Properties.AlarmDescription ?? '';
      const silenceIsFailure = description.startsWith('The compaction schedule has not run');
      // Its metric comes once an hour from the sweep: an hour without a run says nothing about the stored value.
      const silenceKeepsState = description.includes('stored retention_days is not a retention');
      expect(alarm.Properties.TreatMissingData).toBe(silenceIsFailure ? 'breaching' : silenceKeepsState ? 'ignore' : 'notBreaching');
    }
  });

  it('creates the alarms after the planner\'s first run has started, on the create only: a new stack does not start with CompactionNotRunning in ALARM', () => {
    const resources = template.toJSON().Resources as Record<string, { Type: string; Properties?: Record<string, unknown>; DependsOn?: string[] }>;
    const triggers = Object.entries(resources).filter(([, r]) => r.Type === 'Custom::Trigger');
    expect(triggers).toHaveLength(1);
    const [triggerId, trigger] = triggers[0]!;
    // Not again when an update changes the planner (test/infra/default-stack/compaction.ts holds how it runs).
    expect(trigger.Properties).toMatchObject({ HandlerArn: { Ref: expect.stringMatching(/^CompactionPlannerCurrentVersion/) }, ExecuteOnHandlerChange: false });
    const notRunning = Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Alarm' && String(r.Properties?.AlarmDescription).startsWith('The compaction schedule has not run'));
    expect(notRunning).toHaveLength(1);
    expect(notRunning[0]!.DependsOn).toContain(triggerId);
  });

  it('alarms when compaction planning fails or stops, slices fail, the backlog ages or slices reach the dead-letter queue', () => {
    const descriptions = alarms.map((alarm) => alarm.Properties.AlarmDescription ?? '');
    expect(descriptions).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^Compaction planning failed/),
        expect.stringMatching(/^A compaction worker crashed/),
        expect.stringMatching(/^Some hours failed to compact/),
        expect.stringMatching(/^A slice has waited in the compaction queue/),
        expect.stringMatching(/^An organization-hour failed every compaction retry/),
        expect.stringMatching(/^The compaction schedule has not run/),
      ]),
    );
    const queueOf = (queue: { node: { defaultChild?: unknown } }) => [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [stack.getLogicalId(queue.node.defaultChild as never), 'QueueName'] } }];
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'ApproximateAgeOfOldestMessage', Dimensions: queueOf(stack.compaction.queue), Threshold: 3600, EvaluationPeriods: 3 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'ApproximateNumberOfMessagesVisible', Dimensions: queueOf(stack.compaction.deadLetterQueue), Threshold: 1 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Invocations',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: stack.getLogicalId(stack.compaction.planner.node.defaultChild as never) } }],
      ComparisonOperator: 'LessThanThreshold',
      Threshold: 1,
      EvaluationPeriods: 2,
    });
  });

  it('alarms when the retention sweep left an organization alone for a stored retention_days that is not one, linking its runbook', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'TraceIngest',
      MetricName: INVALID_RETENTION_METRIC,
      Dimensions: [{ Name: 'service', Value: SERVICE_NAMES.retention }],
      Statistic: 'Maximum',
      Period: 3600,
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      EvaluationPeriods: 1,
      DatapointsToAlarm: 1,
      TreatMissingData: 'ignore',
      AlarmDescription: Match.stringLikeRegexp(`stored retention_days is not a retention.* Runbook: ${runbookLink('RetentionInvalidSetting')}$`),
      AlarmActions: [topicRef],
    });
  });

  it('requires TLS to publish to the alarm topic', () => {
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
  });

  it('builds one dashboard', () => {
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
  });
});

interface AlarmProperties {
  readonly MetricName?: string;
  readonly Dimensions?: unknown[];
  readonly Metrics?: { MetricStat?: { Metric: { MetricName: string } } }[];
  readonly AlarmActions?: unknown[];
  readonly OKActions?: unknown[];
  readonly TreatMissingData?: string;
  readonly AlarmDescription?: string;
}
