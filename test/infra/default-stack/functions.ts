import { Match } from 'aws-cdk-lib/assertions';
import { ENV } from '../../../lambda/shared/runtime/env-names.js';
import { tenancyKeys } from '../../../lambda/shared/tables.js';
import { DEFAULT_CONFIG } from '../../../lib/config.js';
import { COMPACTION_NODE_OPTIONS } from '../../../lib/constructs/compaction.js';
import type { HouseFunction } from '../../../lib/constructs/house-function.js';
import { defaultStack, sortStatements, statementsOfRole } from '../support/synth-stack.js';

describe('functions', () => {
  const { stack, template } = defaultStack();
  const logicalId = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
  const ref = (construct: { node: { defaultChild?: unknown } }) => ({ Ref: logicalId(construct) });
  const arn = (construct: { node: { defaultChild?: unknown } }) => ({ 'Fn::GetAtt': [logicalId(construct), 'Arn'] });
  const objects = (prefix: string) => ({ 'Fn::Join': ['', [arn(stack.landing.bucket), `/${prefix}*`]] });
  const ingest = stack.ingest.handler;
  const consumer = stack.landing.consumer;
  const roleId = (fn: HouseFunction) => stack.getLogicalId(fn.role?.node.defaultChild as never);

  describe.each([
    ['ingest', () => ingest, '--enable-source-maps'],
    ['landing', () => consumer, '--enable-source-maps'],
    ['compaction planner', () => stack.compaction.planner, '--enable-source-maps'],
    // gc() exposed, so the worker can collect a part's rows before reading the next.
    ['compaction worker', () => stack.compaction.worker, COMPACTION_NODE_OPTIONS],
  ])('the %s function', (_name, fn, nodeOptions = '--enable-source-maps') => {
    it('runs Node 24 on arm64 with source maps and Powertools settings', () => {
      template.hasResourceProperties('AWS::Lambda::Function', {
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        LoggingConfig: { LogFormat: 'JSON', LogGroup: ref(fn().functionLogGroup) },
        Environment: {
          Variables: Match.objectLike({
            NODE_OPTIONS: nodeOptions,
            POWERTOOLS_METRICS_NAMESPACE: 'TraceIngest',
            POWERTOOLS_SERVICE_NAME: Match.anyValue(),
          }),
        },
        Role: arn(fn().role as never),
      });
    });

    it('logs to its own log group with a retention', () => {
      template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: DEFAULT_CONFIG.logRetention });
      expect(template.toJSON().Resources[logicalId(fn().functionLogGroup)].Properties.RetentionInDays).toBe(DEFAULT_CONFIG.logRetention);
    });

    it('has a role with no managed policies that lambda alone can assume', () => {
      const role = template.toJSON().Resources[roleId(fn())];
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
      expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
        { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' } },
      ]);
    });
  });

  it('logs every function of the template, CDK\'s trigger provider included, to a log group of the stack with the retention, deleted with it', () => {
    const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: { LoggingConfig?: { LogGroup?: { Ref?: string } } }; DeletionPolicy?: string }>;
    const functions = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::Lambda::Function');
    expect(functions.map(([id]) => id)).toContainEqual(expect.stringMatching(/^AWSCDKTriggerCustomResourceProvider/));
    for (const [id, fn] of functions) {
      // Without a LoggingConfig, Lambda writes to /aws/lambda/<name>, a group it creates outside the stack and keeps forever.
      const group = resources[fn.Properties.LoggingConfig?.LogGroup?.Ref ?? ''];
      expect([id, group?.Type, (group?.Properties as { RetentionInDays?: number } | undefined)?.RetentionInDays, group?.DeletionPolicy]).toEqual([id, 'AWS::Logs::LogGroup', DEFAULT_CONFIG.logRetention, 'Delete']);
    }
  });

  it('gives the ingest function the names of its resources under the shared ENV names', () => {
    expect(template.toJSON().Resources[logicalId(ingest)].Properties.Environment.Variables).toEqual(
      expect.objectContaining({
        [ENV.tenancyTable]: ref(stack.tables.tenancyTable),
        [ENV.rateTable]: ref(stack.tables.rateTable),
        [ENV.traceStream]: ref(stack.traceStream.stream),
        [ENV.dataBucket]: ref(stack.landing.bucket),
        [ENV.keyCacheSeconds]: String(DEFAULT_CONFIG.ingest.keyCacheSeconds),
      }),
    );
  });

  it('gives the consumer the bucket name and nothing it does not read', () => {
    const variables = template.toJSON().Resources[logicalId(consumer)].Properties.Environment.Variables as Record<string, unknown>;
    expect(variables[ENV.dataBucket]).toEqual(ref(stack.landing.bucket));
    expect(variables).not.toHaveProperty(ENV.tenancyTable);
    expect(variables).not.toHaveProperty(ENV.rateTable);
  });

  it('sizes the functions from the configuration, ingest finishing before the 29 s gateway timeout', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'index.handler',
      MemorySize: DEFAULT_CONFIG.ingest.memorySize,
      Timeout: DEFAULT_CONFIG.ingest.timeout.toSeconds(),
      Role: arn(ingest.role as never),
    });
    expect(DEFAULT_CONFIG.ingest.timeout.toSeconds()).toBeLessThan(29);
    template.hasResourceProperties('AWS::Lambda::Function', {
      MemorySize: DEFAULT_CONFIG.landing.memorySize,
      Timeout: DEFAULT_CONFIG.landing.timeout.toSeconds(),
      Role: arn(consumer.role as never),
    });
  });

  it('lets the ingest function do exactly what it needs, on its resources only', () => {
    expect(sortStatements(statementsOfRole(template, roleId(ingest)))).toEqual(
      sortStatements([
        { actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [arn(ingest.functionLogGroup)] },
        { actions: ['dynamodb:GetItem'], resources: [arn(stack.tables.tenancyTable)] },
        {
          actions: ['dynamodb:BatchGetItem', 'dynamodb:ConditionCheckItem', 'dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
          resources: [arn(stack.tables.rateTable)],
        },
        { actions: ['kinesis:PutRecord', 'kinesis:PutRecords'], resources: [arn(stack.traceStream.stream)] },
        { actions: ['s3:DeleteObject', 's3:PutObject'], resources: [objects('overflow/')] },
      ]),
    );
  });

  it('lets the ingest function read only the partitions of API keys, organizations (their workspaces too) and plans of the tenancy table, never the erasure secret', () => {
    const tenancyId = logicalId(stack.tables.tenancyTable);
    const policies = Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId(ingest) }] } }));
    const statements = policies.flatMap((policy) => (policy as { Properties: { PolicyDocument: { Statement: { Resource: unknown; Condition?: Record<string, Record<string, string[]>> }[] } } }).Properties.PolicyDocument.Statement);
    const onTenancy = statements.filter((statement) => JSON.stringify(statement.Resource).includes(`"${tenancyId}"`));
    expect(onTenancy).toHaveLength(1);
    const patterns = onTenancy[0]?.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'] ?? [];
    // IAM's StringLike: * is any run of characters, ? one.
    const admits = (pk: string) => patterns.some((pattern) => new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`).test(pk));
    const read = [tenancyKeys.apiKey('0f'.repeat(32)), tenancyKeys.organization('acme'), tenancyKeys.workspace('acme', 'prod'), tenancyKeys.plan('team')];
    expect(read.map((key) => [key.pk, admits(key.pk)])).toEqual(read.map((key) => [key.pk, true]));
    expect(admits(tenancyKeys.erasureSecret().pk)).toBe(false);
  });

  it('lets the consumer read the stream and overflow objects (a missing one answered 404: ListBucket), write only its datasets and dead letters, and report failures', () => {
    expect(sortStatements(statementsOfRole(template, roleId(consumer)))).toEqual(
      sortStatements([
        { actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [arn(consumer.functionLogGroup)] },
        { actions: ['s3:GetObject'], resources: [objects('overflow/')] },
        { actions: ['s3:ListBucket'], resources: [arn(stack.landing.bucket)] },
        { actions: ['s3:PutObject'], resources: [objects('dead-letter/'), objects('spans/'), objects('traces/')] },
        { actions: ['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage'], resources: [arn(stack.landing.failureQueue)] },
        {
          actions: [
            'kinesis:DescribeStream',
            'kinesis:DescribeStreamConsumer',
            'kinesis:DescribeStreamSummary',
            'kinesis:GetRecords',
            'kinesis:GetShardIterator',
            'kinesis:ListShards',
            'kinesis:ListStreams',
            'kinesis:SubscribeToShard',
          ],
          resources: [arn(stack.traceStream.stream)],
        },
      ]),
    );
  });

  it('grants no function any DynamoDB, Kinesis or S3 action on a wildcard resource', () => {
    for (const fn of [ingest, consumer, stack.compaction.planner, stack.compaction.worker]) {
      const statements = statementsOfRole(template, roleId(fn));
      // Every function reads or writes data: finding none of its grants, the check below would look at nothing.
      const dataStatements = statements.filter((statement) => statement.actions.some((action) => /^(dynamodb|kinesis|s3):/.test(action)));
      expect([fn.node.id, dataStatements.length > 0]).toEqual([fn.node.id, true]);
      for (const statement of statements) expect([fn.node.id, statement.resources]).toEqual([fn.node.id, expect.not.arrayContaining(['*'])]);
    }
  });
});
