import { CloudFormationClient, DescribeStacksCommand, GetTemplateCommand, ListStackResourcesCommand } from '@aws-sdk/client-cloudformation';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { cdkDestroyArgs, describePlan, teardownPlan } from '../../../scripts/ops/teardown.js';

const cloudformation = mockClient(CloudFormationClient);
beforeEach(() => cloudformation.reset());

it('keeps what the deployed template retains, with the command that deletes each, and counts the rest as deleted', async () => {
  cloudformation.on(DescribeStacksCommand).resolves({ Stacks: [{ StackName: 'TraceIngest', StackStatus: 'CREATE_COMPLETE', CreationTime: new Date() }] });
  cloudformation.on(GetTemplateCommand).resolves({
    TemplateBody: JSON.stringify({
      Resources: {
        TablesTenancyAE410788: { Type: 'AWS::DynamoDB::Table', DeletionPolicy: 'Retain' },
        LandingDataBucket630309D4: { Type: 'AWS::S3::Bucket', DeletionPolicy: 'Retain' },
        TraceStreamF2A3E94C: { Type: 'AWS::Kinesis::Stream', DeletionPolicy: 'Retain' },
        IngestHandler3EA8EDEE: { Type: 'AWS::Lambda::Function' },
        LandingFailureQueue0535F903: { Type: 'AWS::SQS::Queue', DeletionPolicy: 'Delete' },
      },
    }),
  });
  cloudformation
    .on(ListStackResourcesCommand)
    .resolvesOnce({
      StackResourceSummaries: [
        { LogicalResourceId: 'TablesTenancyAE410788', PhysicalResourceId: 'TraceIngest-Tenancy-1', ResourceType: 'AWS::DynamoDB::Table', LastUpdatedTimestamp: new Date(), ResourceStatus: 'CREATE_COMPLETE' },
        { LogicalResourceId: 'LandingDataBucket630309D4', PhysicalResourceId: 'traceingest-data-1', ResourceType: 'AWS::S3::Bucket', LastUpdatedTimestamp: new Date(), ResourceStatus: 'CREATE_COMPLETE' },
      ],
      NextToken: 'page-2',
    })
    .resolves({
      StackResourceSummaries: [
        { LogicalResourceId: 'TraceStreamF2A3E94C', PhysicalResourceId: 'TraceIngest-Stream-1', ResourceType: 'AWS::Kinesis::Stream', LastUpdatedTimestamp: new Date(), ResourceStatus: 'CREATE_COMPLETE' },
        { LogicalResourceId: 'IngestHandler3EA8EDEE', PhysicalResourceId: 'TraceIngest-Ingest-1', ResourceType: 'AWS::Lambda::Function', LastUpdatedTimestamp: new Date(), ResourceStatus: 'CREATE_COMPLETE' },
        { LogicalResourceId: 'LandingFailureQueue0535F903', PhysicalResourceId: 'https://sqs/q', ResourceType: 'AWS::SQS::Queue', LastUpdatedTimestamp: new Date(), ResourceStatus: 'CREATE_COMPLETE' },
      ],
    });

  const plan = await teardownPlan(new CloudFormationClient({}), 'TraceIngest');

  expect(plan.deleted).toEqual({ 'AWS::Lambda::Function': 1, 'AWS::SQS::Queue': 1 });
  expect(plan.kept.map((r) => [r.physicalId, r.deleteWith])).toEqual([
    ['TraceIngest-Tenancy-1', 'aws dynamodb update-table --table-name TraceIngest-Tenancy-1 --no-deletion-protection-enabled && aws dynamodb delete-table --table-name TraceIngest-Tenancy-1'],
    ['traceingest-data-1', 'aws s3 rb s3://traceingest-data-1 --force'],
    ['TraceIngest-Stream-1', 'aws kinesis delete-stream --stream-name TraceIngest-Stream-1 --enforce-consumer-deletion'],
  ]);
  expect(cloudformation).toHaveReceivedCommandWith(GetTemplateCommand, { StackName: 'TraceIngest', TemplateStage: 'Original' });
  expect(cloudformation).toHaveReceivedCommandWith(ListStackResourcesCommand, { StackName: 'TraceIngest', NextToken: 'page-2' });
  expect(describePlan(plan)).toContain('  1 × AWS::Lambda::Function');
  expect(describePlan(plan)).toContain('    delete: aws s3 rb s3://traceingest-data-1 --force');
  expect(describePlan(plan)).toMatch(/^Deleted with stack TraceIngest:/);
});

it('after a first create that rolled back, lists exactly what the rollback left: the protected tables, not what it deleted', async () => {
  cloudformation.on(DescribeStacksCommand).resolves({ Stacks: [{ StackName: 'TraceIngest', StackStatus: 'ROLLBACK_FAILED', CreationTime: new Date() }] });
  cloudformation.on(GetTemplateCommand).resolves({
    TemplateBody: JSON.stringify({
      Resources: {
        TablesTenancyAE410788: { Type: 'AWS::DynamoDB::Table', DeletionPolicy: 'RetainExceptOnCreate' },
        LandingDataBucket630309D4: { Type: 'AWS::S3::Bucket', DeletionPolicy: 'RetainExceptOnCreate' },
        IngestHandler3EA8EDEE: { Type: 'AWS::Lambda::Function' },
      },
    }),
  });
  const summary = (LogicalResourceId: string, ResourceType: string, ResourceStatus: 'DELETE_FAILED' | 'DELETE_COMPLETE') => ({
    LogicalResourceId,
    PhysicalResourceId: `${LogicalResourceId}-1`,
    ResourceType,
    ResourceStatus,
    LastUpdatedTimestamp: new Date(),
  });
  cloudformation.on(ListStackResourcesCommand).resolves({
    StackResourceSummaries: [
      summary('TablesTenancyAE410788', 'AWS::DynamoDB::Table', 'DELETE_FAILED'),
      summary('LandingDataBucket630309D4', 'AWS::S3::Bucket', 'DELETE_COMPLETE'),
      summary('IngestHandler3EA8EDEE', 'AWS::Lambda::Function', 'DELETE_COMPLETE'),
    ],
  });

  const plan = await teardownPlan(new CloudFormationClient({}), 'TraceIngest');

  expect(plan.kept.map((r) => r.physicalId)).toEqual(['TablesTenancyAE410788-1']);
  expect(plan.deleted).toEqual({});
  expect(describePlan(plan)).toMatch(/^Stack TraceIngest is ROLLBACK_FAILED: its first create failed and rolled back\. The resources below are what it left/);
});

it('runs cdk destroy with the stack\'s own Glue database name, so the synth accepts a stack named before the names were checked', () => {
  expect(cdkDestroyArgs('TraceIngestDev', { GlueDatabaseName: 'trace_ingest_traceingestdev' })).toEqual(['cdk', 'destroy', 'TraceIngestDev', '--force', '-c', 'stackName=TraceIngestDev', '-c', 'glueDatabaseName=trace_ingest_traceingestdev']);
  // A first create rolled back has no outputs.
  expect(cdkDestroyArgs('trace-ingest', {})).toEqual(['cdk', 'destroy', 'trace-ingest', '--force', '-c', 'stackName=trace-ingest']);
});
