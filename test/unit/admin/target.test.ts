import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { localTarget, stackTarget } from '../../../scripts/admin/target.js';
import { localPaths } from '../../../devkit/local-stack/local-state.js';

const OUTPUT_NAMES = { tenancyTableName: 'TenancyTableName', rateTableName: 'RateTableName', dataBucketName: 'DataBucketName' };

describe('stackTarget', () => {
  const cloudformation = mockClient(CloudFormationClient);
  beforeEach(() => cloudformation.reset());

  it('reads the tenancy table name from the stack outputs', async () => {
    cloudformation.on(DescribeStacksCommand).resolves({
      Stacks: [
        {
          StackName: 'TraceIngest',
          CreationTime: new Date(),
          StackStatus: 'CREATE_COMPLETE',
          Outputs: [
            { OutputKey: 'ApiUrl', OutputValue: 'https://x/prod/' },
            { OutputKey: 'TenancyTableName', OutputValue: 'TraceIngest-Tenancy-123' },
            { OutputKey: 'RateTableName', OutputValue: 'TraceIngest-Rate-456' },
            { OutputKey: 'DataBucketName', OutputValue: 'traceingest-data-789' },
          ],
        },
      ],
    });
    const target = await stackTarget(new CloudFormationClient({ region: 'eu-west-1' }), 'TraceIngest', 'eu-west-1', OUTPUT_NAMES);
    expect(target).toEqual({ tenancyTable: 'TraceIngest-Tenancy-123', rateTable: 'TraceIngest-Rate-456', dynamodb: { region: 'eu-west-1' }, dataBucket: 'traceingest-data-789', s3: { region: 'eu-west-1' } });
    expect(cloudformation).toHaveReceivedCommandWith(DescribeStacksCommand, { StackName: 'TraceIngest' });
  });

  it('reads the stack\'s retention ceiling from its DataRetentionDays output when the stack has one', async () => {
    const outputs = [
      { OutputKey: 'TenancyTableName', OutputValue: 't' },
      { OutputKey: 'RateTableName', OutputValue: 'r' },
      { OutputKey: 'DataBucketName', OutputValue: 'b' },
    ];
    cloudformation.on(DescribeStacksCommand).resolves({ Stacks: [{ StackName: 'S', CreationTime: new Date(), StackStatus: 'CREATE_COMPLETE', Outputs: [...outputs, { OutputKey: 'DataRetentionDays', OutputValue: '400' }] }] });
    const names = { ...OUTPUT_NAMES, dataRetentionDays: 'DataRetentionDays' };
    await expect(stackTarget(new CloudFormationClient({ region: 'us-east-1' }), 'S', 'us-east-1', names)).resolves.toMatchObject({ retentionCeilingDays: 400 });
    cloudformation.on(DescribeStacksCommand).resolves({ Stacks: [{ StackName: 'S', CreationTime: new Date(), StackStatus: 'CREATE_COMPLETE', Outputs: outputs }] });
    expect((await stackTarget(new CloudFormationClient({ region: 'us-east-1' }), 'S', 'us-east-1', names)).retentionCeilingDays).toBeUndefined();
  });

  it('says which output is missing', async () => {
    cloudformation.on(DescribeStacksCommand).resolves({ Stacks: [{ StackName: 'S', CreationTime: new Date(), StackStatus: 'CREATE_COMPLETE', Outputs: [] }] });
    await expect(stackTarget(new CloudFormationClient({ region: 'us-east-1' }), 'S', 'us-east-1', OUTPUT_NAMES)).rejects.toThrow(
      'stack S in us-east-1 has no output TenancyTableName',
    );
  });
});

describe('localTarget', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'admin-target-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reaches the running local stack through endpoints.json', () => {
    const paths = localPaths(dir);
    writeFileSync(paths.endpoints, JSON.stringify({ dynamodb: 'http://127.0.0.1:8000', tables: { tenancy: 'local-Tenancy', rate: 'r' }, pid: process.pid }));
    expect(localTarget(paths)).toMatchObject({
      tenancyTable: 'local-Tenancy',
      rateTable: 'r',
      dynamodb: { endpoint: 'http://127.0.0.1:8000', region: 'us-east-1' },
    });
  });

  it('says the local stack is not running when endpoints.json is missing or stale', () => {
    const paths = localPaths(dir);
    expect(() => localTarget(paths)).toThrow('the local stack is not running');
    writeFileSync(paths.endpoints, JSON.stringify({ pid: 2 ** 22 + 12_345 }));
    expect(() => localTarget(paths)).toThrow('start it with npm start');
  });
});
