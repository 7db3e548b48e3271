import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { AttributeType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { ENV } from '../../../lambda/shared/runtime/env-names.js';
import { tenancyKeys } from '../../../lambda/shared/tables.js';
import { DEFAULT_CONFIG, validateConfig } from '../../../lib/config.js';
import { COMPACTION_MAX_RECEIVE_COUNT, COMPACTION_VISIBILITY_TIMEOUT, COMPACTION_WORKER_TIMEOUT, Compaction } from '../../../lib/constructs/compaction.js';
import type { HouseFunction } from '../../../lib/constructs/house-function.js';
import { DEFAULT_ENTRIES } from '../../../lib/trace-ingest-stack.js';
import { defaultStack, PROJECT_ROOT, sortStatements, statementsOfRole, synthStack, unbundledApp } from '../support/synth-stack.js';

describe('compaction fan-out', () => {
  const { stack, template } = defaultStack();
  const { compaction } = stack;
  const logicalId = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
  const arn = (construct: { node: { defaultChild?: unknown } }) => ({ 'Fn::GetAtt': [logicalId(construct), 'Arn'] });
  const objects = (prefix: string) => ({ 'Fn::Join': ['', [arn(stack.landing.bucket), `/${prefix}*`]] });
  const roleId = (fn: HouseFunction) => stack.getLogicalId(fn.role?.node.defaultChild as never);
  const resource = (construct: { node: { defaultChild?: unknown } }) => template.toJSON().Resources[logicalId(construct)] as { Properties: Record<string, unknown> };

  it('queues slices on an encrypted FIFO queue whose visibility timeout is six times the worker timeout, with a FIFO dead-letter queue after 5 receives', () => {
    expect(resource(compaction.queue).Properties).toEqual(
      expect.objectContaining({
        FifoQueue: true,
        SqsManagedSseEnabled: true,
        VisibilityTimeout: 6 * COMPACTION_WORKER_TIMEOUT.toSeconds(),
        RedrivePolicy: { deadLetterTargetArn: arn(compaction.deadLetterQueue), maxReceiveCount: 5 },
      }),
    );
    expect(resource(compaction.queue).Properties.ContentBasedDeduplication).toBeUndefined();
    expect(COMPACTION_VISIBILITY_TIMEOUT.toSeconds()).toBe(5400);
    expect(COMPACTION_MAX_RECEIVE_COUNT).toBeGreaterThanOrEqual(5);
    expect(resource(compaction.deadLetterQueue).Properties).toEqual(expect.objectContaining({ FifoQueue: true, SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * 86400 }));
  });

  it.each([
    ['queue', () => compaction.queue],
    ['dead-letter queue', () => compaction.deadLetterQueue],
  ])('denies the %s to requests without TLS', (_name, queue) => {
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      Queues: [{ Ref: logicalId(queue()) }],
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Action: 'sqs:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
  });

  it('runs the worker from the queue one slice per invocation, reports failed slices as batch item failures, and caps concurrency at the configured default of 10', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalId(compaction.worker) },
      EventSourceArn: arn(compaction.queue),
      BatchSize: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: DEFAULT_CONFIG.compaction.maxConcurrency },
    });
    expect(DEFAULT_CONFIG.compaction.maxConcurrency).toBe(10);
    expect(resource(compaction.worker).Properties).toEqual(expect.objectContaining({ Timeout: 900, MemorySize: 3008 }));
    expect(resource(compaction.worker).Properties.ReservedConcurrentExecutions).toBeUndefined();
  });

  it('runs the planner on a 15-minute schedule without retries, by EventBridge or by Lambda, and tells both functions the queue', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(15 minutes)',
      Targets: [Match.objectLike({ Arn: arn(compaction.planner), RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 900 } })],
    });
    expect(resource(compaction.planner).Properties).toEqual(expect.objectContaining({ Timeout: 900 }));
    // Lambda would retry a failed asynchronous run twice; the next scheduled run plans what is pending.
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: logicalId(compaction.planner) },
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 900,
    });
    expect((resource(compaction.planner).Properties.Environment as { Variables: Record<string, unknown> }).Variables).toEqual(
      expect.objectContaining({ [ENV.dataBucket]: { Ref: logicalId(stack.landing.bucket) }, [ENV.compactionQueueUrl]: { Ref: logicalId(compaction.queue) }, [ENV.tenancyTable]: { Ref: logicalId(stack.tables.tenancyTable) } }),
    );
    expect((resource(compaction.worker).Properties.Environment as { Variables: Record<string, unknown> }).Variables).toEqual(
      expect.objectContaining({ [ENV.dataBucket]: { Ref: logicalId(stack.landing.bucket) }, [ENV.compactionQueueUrl]: { Ref: logicalId(compaction.queue) } }),
    );
  });

  describe('the planner\'s first run, when the stack is created (or an update adds the trigger)', () => {
    const trigger = () => Object.values(template.findResources('Custom::Trigger')) as { Properties: Record<string, unknown> }[];

    it('starts the run and returns: an update of a stack with a busy bucket never waits on the planner, nor reruns it when a wait times out', () => {
      expect(trigger()).toHaveLength(1);
      expect(trigger()[0]?.Properties).toMatchObject({ InvocationType: 'Event', ExecuteOnHandlerChange: false });
    });

    it('lets CloudFormation wait 5 minutes for the trigger, not the custom resource default of an hour', () => {
      expect(trigger()[0]?.Properties.ServiceTimeout).toBe(300);
    });

    it('does not retry a failed first run (the trigger invokes a version, which the function\'s own asynchronous settings do not cover)', () => {
      const version = (trigger()[0]?.Properties.HandlerArn as { Ref: string }).Ref;
      expect(template.toJSON().Resources[version]).toMatchObject({ Type: 'AWS::Lambda::Version', Properties: { FunctionName: { Ref: logicalId(compaction.planner) } } });
      template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: { Ref: logicalId(compaction.planner) },
        Qualifier: { 'Fn::GetAtt': [version, 'Version'] },
        MaximumRetryAttempts: 0,
        MaximumEventAgeInSeconds: 900,
      });
    });
  });

  it('reserves no concurrency for the planner by default, which would fail the deploy on new accounts, and reserves it only when asked', () => {
    expect(resource(compaction.planner).Properties.ReservedConcurrentExecutions).toBeUndefined();
    const opted = synthStack({ config: { ...DEFAULT_CONFIG, compaction: { ...DEFAULT_CONFIG.compaction, plannerReservedConcurrency: 1 } } });
    expect(
      opted.template.toJSON().Resources[opted.stack.getLogicalId(opted.stack.compaction.planner.node.defaultChild as never)].Properties.ReservedConcurrentExecutions,
    ).toBe(1);
    expect(() => validateConfig({ ...DEFAULT_CONFIG, compaction: { ...DEFAULT_CONFIG.compaction, plannerReservedConcurrency: 0 } })).toThrow(/plannerReservedConcurrency/);
  });

  it('lets the planner list the bucket, read manifests, read and write part plans and send to the queue, and nothing else', () => {
    expect(sortStatements(statementsOfRole(template, roleId(compaction.planner)))).toEqual(
      sortStatements([
        { actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [arn(compaction.planner.functionLogGroup)] },
        { actions: ['s3:ListBucket'], resources: [arn(stack.landing.bucket)] },
        { actions: ['s3:GetObject'], resources: [objects('manifests/'), objects('compacted/plans/')] },
        { actions: ['s3:PutObject'], resources: [objects('compacted/plans/')] },
        { actions: ['sqs:SendMessage'], resources: [arn(compaction.queue)] },
        { actions: ['s3:GetObject', 's3:PutObject'], resources: [objects('erasures/')] },
        { actions: ['dynamodb:GetItem', 'dynamodb:PutItem'], resources: [arn(stack.tables.tenancyTable)] },
      ]),
    );
  });

  it('lets the planner and the worker get and put only the erasure secret\'s partition of the tenancy table', () => {
    for (const fn of [compaction.planner, compaction.worker]) {
      const policies = Object.values(template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId(fn) }] } }));
      const statements = policies.flatMap((policy) => (policy as { Properties: { PolicyDocument: { Statement: { Action: unknown; Condition?: unknown }[] } } }).Properties.PolicyDocument.Statement);
      const dynamodb = statements.filter((statement) => [statement.Action].flat().some((action) => String(action).startsWith('dynamodb:')));
      expect(dynamodb).toHaveLength(1);
      expect(dynamodb[0]!.Condition).toEqual({ 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [tenancyKeys.erasureSecret().pk] } });
    }
  });

  it('lets the worker read its prefixes, write compacted objects and manifests, abort uploads of compacted objects, delete them and (for hours past retention) raw objects and manifests, consume the queue and send a waiting switch again', () => {
    expect(sortStatements(statementsOfRole(template, roleId(compaction.worker)))).toEqual(
      sortStatements([
        { actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [arn(compaction.worker.functionLogGroup)] },
        { actions: ['s3:ListBucket'], resources: [arn(stack.landing.bucket)] },
        { actions: ['s3:GetObject'], resources: [objects('traces/'), objects('spans/'), objects('compacted/'), objects('manifests/')] },
        { actions: ['s3:PutObject'], resources: [objects('compacted/'), objects('manifests/')] },
        { actions: ['s3:AbortMultipartUpload', 's3:DeleteObject'], resources: [objects('compacted/')] },
        { actions: ['s3:GetObject', 's3:PutObject'], resources: [objects('erasures/')] },
        { actions: ['dynamodb:GetItem', 'dynamodb:PutItem'], resources: [arn(stack.tables.tenancyTable)] },
        // Retention deletes an expired hour's raw objects, manifest and erasure index; an erasure, the raw and overflow objects that hold an erased trace.
        { actions: ['s3:DeleteObject'], resources: [objects('traces/'), objects('spans/'), objects('manifests/'), objects('overflow/'), objects('erasures/index/')] },
        { actions: ['sqs:ChangeMessageVisibility', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:ReceiveMessage', 'sqs:SendMessage'], resources: [arn(compaction.queue)] },
      ]),
    );
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Action: 's3:ListBucket', Condition: Match.absent() })]) },
    });
  });

  it('takes the ceiling on parallel slices from the configuration, and rejects one the event source would refuse', () => {
    const own = new Stack(unbundledApp(), 'CompactionConcurrency');
    const bucket = new Bucket(own, 'Bucket');
    new Compaction(own, 'Compaction', {
      projectRoot: PROJECT_ROOT,
      plannerEntry: DEFAULT_ENTRIES.compactionPlanner,
      workerEntry: DEFAULT_ENTRIES.compactionWorker,
      bucket,
      tenancyTable: new Table(own, 'Tenancy', { partitionKey: { name: 'pk', type: AttributeType.STRING } }),
      settings: { maxConcurrency: 50 },
      logRetention: RetentionDays.ONE_DAY,
      metricsNamespace: 'Test',
    });
    Template.fromStack(own).hasResourceProperties('AWS::Lambda::EventSourceMapping', { ScalingConfig: { MaximumConcurrency: 50 } });
    expect(JSON.stringify(Template.fromStack(own).toJSON())).not.toContain('ReservedConcurrentExecutions');
    for (const maxConcurrency of [1, 1001, 2.5]) {
      expect(() => validateConfig({ ...DEFAULT_CONFIG, compaction: { maxConcurrency } })).toThrow(/compaction.maxConcurrency must be an integer in 2..1000/);
    }
  });
});
