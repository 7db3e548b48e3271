import { ENV } from '../../../lambda/shared/runtime/env-names.js';
import { ORGANIZATIONS_INDEX, PLANS_PARTITION } from '../../../lambda/shared/tables.js';
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
        { actions: ['dynamodb:Scan'], resources: [{ 'Fn::Join': ['', [arn(stack.tables.tenancyTable), `/index/${ORGANIZATIONS_INDEX}`]] }] },
        { actions: ['dynamodb:Query'], resources: [arn(stack.tables.tenancyTable)] },
        { actions: ['s3:ListBucket'], resources: [arn(stack.landing.bucket)] },
        { actions: ['s3:DeleteObject'], resources: [{ 'Fn::Join': ['', [arn(stack.landing.bucket), '/overflow/*']] }] },
        { actions: ['sqs:SendMessage'], resources: [arn(stack.compaction.queue)] },
      ]),
    );
  });

  it('gives the sweeper no read that can return the erasure secret or a key hash: a scan of the organizations index only, and queries of the plans partition only', () => {
    const tenancyArn = JSON.stringify(arn(stack.tables.tenancyTable));
    const policies = Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: stack.getLogicalId(retention.sweeper.role?.node.defaultChild as never) }] } }));
    const statements = policies.flatMap((policy) => (policy as { Properties: { PolicyDocument: { Statement: { Action: string | string[]; Resource: unknown; Condition?: unknown }[] } } }).Properties.PolicyDocument.Statement);
    const onTenancy = statements.filter((statement) => JSON.stringify(statement.Resource).includes(tenancyArn));
    // A Scan carries no partition key, so dynamodb:LeadingKeys cannot limit it (ForAllValues over no keys is true):
    // the table ARN must not be a Scan's resource at all.
    const scans = onTenancy.filter((statement) => [statement.Action].flat().includes('dynamodb:Scan'));
    expect(scans.map((statement) => statement.Resource)).toEqual([{ 'Fn::Join': ['', [arn(stack.tables.tenancyTable), `/index/${ORGANIZATIONS_INDEX}`]] }]);
    const queries = onTenancy.filter((statement) => [statement.Action].flat().includes('dynamodb:Query'));
    expect(queries.map((statement) => [statement.Resource, statement.Condition])).toEqual([[arn(stack.tables.tenancyTable), { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [PLANS_PARTITION] } }]]);
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
