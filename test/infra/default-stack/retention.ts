import { ENV } from '../../../lambda/shared/runtime/env-names.js';
import { DEFAULT_CONFIG } from '../../../lib/config.js';
import { defaultStack, sortStatements, statementsOfRole, synthStack } from '../support/synth-stack.js';

describe('retention sweep', () => {
  const { stack, template } = defaultStack();
  const { retention } = stack;
  const logicalId = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
  const arn = (construct: { node: { defaultChild?: unknown } }) => ({ 'Fn::GetAtt': [logicalId(construct), 'Arn'] });
  const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, unknown> }>;

  it('runs the sweeper every hour from an EventBridge rule, with no retries (the next run finds what is left)', () => {
    expect(resources[logicalId(retention.schedule)]!.Properties).toMatchObject({
      ScheduleExpression: 'rate(1 hour)',
      State: 'ENABLED',
      Targets: [expect.objectContaining({ Arn: arn(retention.sweeper), RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 900 } })],
    });
    const asyncConfig = Object.values(resources).find((r) => r.Type === 'AWS::Lambda::EventInvokeConfig' && JSON.stringify(r.Properties.FunctionName).includes(logicalId(retention.sweeper)));
    expect(asyncConfig?.Properties).toMatchObject({ MaximumRetryAttempts: 0 });
  });

  it('lets the sweeper scan organizations and query plans, list the bucket, delete only overflow objects and queue hours on the compaction queue, and nothing else', () => {
    expect(sortStatements(statementsOfRole(template, stack.getLogicalId(retention.sweeper.role?.node.defaultChild as never)))).toEqual(
      sortStatements([
        { actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [arn(retention.sweeper.functionLogGroup)] },
        { actions: ['dynamodb:Query', 'dynamodb:Scan'], resources: [arn(stack.tables.tenancyTable)] },
        { actions: ['s3:ListBucket'], resources: [arn(stack.landing.bucket)] },
        { actions: ['s3:DeleteObject'], resources: [{ 'Fn::Join': ['', [arn(stack.landing.bucket), '/overflow/*']] }] },
        { actions: ['sqs:SendMessage'], resources: [arn(stack.compaction.queue)] },
      ]),
    );
  });

  it('passes the stack\'s dataRetentionDays to the sweeper as the ceiling only when it is set, and outputs it for the admin CLI', () => {
    const variables = (resources[logicalId(retention.sweeper)]!.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(variables[ENV.dataRetentionDays]).toBeUndefined();
    expect(variables).toMatchObject({ [ENV.tenancyTable]: { Ref: logicalId(stack.tables.tenancyTable) }, [ENV.compactionQueueUrl]: { Ref: logicalId(stack.compaction.queue) } });
    const capped = synthStack({ config: { ...DEFAULT_CONFIG, dataRetentionDays: 400 } });
    const cappedResources = capped.template.toJSON().Resources as typeof resources;
    const sweeper = cappedResources[capped.stack.getLogicalId(capped.stack.retention.sweeper.node.defaultChild as never)]!;
    expect((sweeper.Properties.Environment as { Variables: Record<string, unknown> }).Variables[ENV.dataRetentionDays]).toBe('400');
    expect(capped.template.toJSON().Outputs.DataRetentionDays).toMatchObject({ Value: '400' });
    expect(template.toJSON().Outputs.DataRetentionDays).toBeUndefined();
  });
});
