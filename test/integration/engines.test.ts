import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DescribeTableCommand, DescribeTimeToLiveCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeStreamSummaryCommand, KinesisClient, PutRecordCommand } from '@aws-sdk/client-kinesis';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { type Engine, startDynamoDbLocal, startKinesalite, startS3rver } from '../../scripts/local/engines.js';
import { createBucket, createStream, createTables, localClientConfig } from '../../scripts/local/provision.js';

describe('local engines', () => {
  const engines: Engine[] = [];
  let stateDir: string;

  beforeAll(() => {
    stateDir = mkdtempSync(path.join(tmpdir(), 'engines-test-'));
  });

  afterAll(async () => {
    await Promise.all(engines.map((engine) => engine.stop()));
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('starts DynamoDB Local, kinesalite and s3rver and provisions the tables, a stream and a bucket', async () => {
    const [dynamo, kinesis, s3] = await Promise.all([
      startDynamoDbLocal({ dataDir: path.join(stateDir, 'dynamodb') }),
      startKinesalite({ dataDir: path.join(stateDir, 'kinesis') }),
      startS3rver({ dataDir: path.join(stateDir, 's3') }),
    ]);
    engines.push(dynamo, kinesis, s3);

    const dynamodb = new DynamoDBClient(localClientConfig(dynamo.endpoint));
    const kinesisClient = new KinesisClient(localClientConfig(kinesis.endpoint));
    const s3Client = new S3Client(localClientConfig(s3.endpoint));
    try {
      await createTables(dynamodb, { tenancy: 'test-tenancy', rate: 'test-rate' });
      await createTables(dynamodb, { tenancy: 'test-tenancy', rate: 'test-rate' });
      const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: 'test-tenancy' }));
      expect(Table?.GlobalSecondaryIndexes?.map((index) => index.IndexName).sort()).toEqual(['keys-by-id', 'keys-by-org']);
      const ttl = await dynamodb.send(new DescribeTimeToLiveCommand({ TableName: 'test-rate' }));
      expect(ttl.TimeToLiveDescription).toMatchObject({ TimeToLiveStatus: 'ENABLED', AttributeName: 'expires_at' });

      await createStream(kinesisClient, 'test-stream', 2);
      const { StreamDescriptionSummary } = await kinesisClient.send(new DescribeStreamSummaryCommand({ StreamName: 'test-stream' }));
      expect(StreamDescriptionSummary).toMatchObject({ StreamStatus: 'ACTIVE', OpenShardCount: 2 });
      await kinesisClient.send(new PutRecordCommand({ StreamName: 'test-stream', PartitionKey: 'k', Data: Buffer.from('x') }));

      await createBucket(s3Client, 'test-bucket');
      await createBucket(s3Client, 'test-bucket');
      await s3Client.send(new PutObjectCommand({ Bucket: 'test-bucket', Key: 'a/b.txt', Body: 'hello' }));
      const object = await s3Client.send(new GetObjectCommand({ Bucket: 'test-bucket', Key: 'a/b.txt' }));
      expect(await object.Body?.transformToString()).toBe('hello');
    } finally {
      dynamodb.destroy();
      kinesisClient.destroy();
      s3Client.destroy();
    }
  });

  it('stops every engine so that its port no longer answers', async () => {
    await Promise.all(engines.map((engine) => engine.stop()));
    for (const engine of engines) {
      await expect(fetch(engine.endpoint)).rejects.toThrow();
    }
  });

  it('keeps state in dataDir across a restart', async () => {
    const dynamo = await startDynamoDbLocal({ dataDir: path.join(stateDir, 'dynamodb') });
    const kinesis = await startKinesalite({ dataDir: path.join(stateDir, 'kinesis') });
    engines.push(dynamo, kinesis);
    const dynamodb = new DynamoDBClient(localClientConfig(dynamo.endpoint));
    const kinesisClient = new KinesisClient(localClientConfig(kinesis.endpoint));
    try {
      await expect(dynamodb.send(new DescribeTableCommand({ TableName: 'test-tenancy' }))).resolves.toBeDefined();
      await expect(kinesisClient.send(new DescribeStreamSummaryCommand({ StreamName: 'test-stream' }))).resolves.toBeDefined();
    } finally {
      dynamodb.destroy();
      kinesisClient.destroy();
    }
  });
});
