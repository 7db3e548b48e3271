import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CreateTableCommand, DescribeTableCommand, DescribeTimeToLiveCommand, DynamoDBClient, ListTablesCommand, PutItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { DescribeStreamSummaryCommand, KinesisClient, PutRecordCommand } from '@aws-sdk/client-kinesis';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { type Engine, startDynamoDbLocal, startKinesalite, startS3rver } from '../../devkit/engines/engines.js';
import { createBucket, createStream, createTableInput, createTables, localClientConfig } from '../../devkit/engines/provision.js';
import { TENANCY_TABLE } from '../../lambda/shared/tables.js';

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
      expect(Table?.GlobalSecondaryIndexes?.map((index) => index.IndexName).sort()).toEqual(TENANCY_TABLE.globalIndexes.map((index) => index.indexName).sort());
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

  it('adds an index the definition gained to a table kept from before it, with its items, as CloudFormation does on an update', async () => {
    const dynamo = await startDynamoDbLocal();
    engines.push(dynamo);
    const dynamodb = new DynamoDBClient(localClientConfig(dynamo.endpoint));
    try {
      const [added, ...before] = [...TENANCY_TABLE.globalIndexes].reverse();
      await dynamodb.send(new CreateTableCommand(createTableInput({ ...TENANCY_TABLE, globalIndexes: before.reverse() }, 'old-tenancy')));
      await dynamodb.send(new PutItemCommand({ TableName: 'old-tenancy', Item: { pk: { S: 'ORG#acme' }, sk: { S: 'ORG' }, org_id: { S: 'acme' }, plan: { S: 'team' } } }));
      await createTables(dynamodb, { tenancy: 'old-tenancy', rate: 'old-rate' });
      const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: 'old-tenancy' }));
      expect(Table?.GlobalSecondaryIndexes?.map((index) => [index.IndexName, index.IndexStatus]).sort()).toEqual(TENANCY_TABLE.globalIndexes.map((index) => [index.indexName, 'ACTIVE']).sort());
      const { Items } = await dynamodb.send(new ScanCommand({ TableName: 'old-tenancy', IndexName: added!.indexName }));
      expect(Items?.map((item) => item.org_id?.S)).toEqual(['acme']);
    } finally {
      dynamodb.destroy();
    }
  });

  // A contract test pinned to s3rver 3.7.1's FilesystemStore internals (devkit/engines/s3rver-atomic-writes.ts).
  it('s3rver writes objects atomically: complete on disk when PutObject answers, no partial file left or listed', async () => {
    const dataDir = path.join(stateDir, 's3-atomic');
    const s3 = await startS3rver({ dataDir });
    engines.push(s3);
    const client = new S3Client(localClientConfig(s3.endpoint));
    try {
      await createBucket(client, 'atomic');
      const bodies = Array.from({ length: 6 }, (_, i) => Buffer.alloc(4 * 1024 * 1024 + i, 65 + i));
      await Promise.all(bodies.map((body, i) => client.send(new PutObjectCommand({ Bucket: 'atomic', Key: `dir/object-${i}.parquet`, Body: body }))));
      const files = readdirSync(path.join(dataDir, 'atomic', 'dir'));
      expect(files.filter((name) => name.includes('.partial-'))).toEqual([]);
      bodies.forEach((body, i) => expect(readFileSync(path.join(dataDir, 'atomic', 'dir', `object-${i}.parquet._S3rver_object`)).equals(body)).toBe(true));
      const listed = await client.send(new ListObjectsV2Command({ Bucket: 'atomic' }));
      expect(listed.Contents?.map((object) => object.Key).sort()).toEqual(bodies.map((_, i) => `dir/object-${i}.parquet`));
      const object = await client.send(new GetObjectCommand({ Bucket: 'atomic', Key: 'dir/object-5.parquet' }));
      expect(Buffer.from((await object.Body?.transformToByteArray()) ?? []).equals(bodies[5]!)).toBe(true);
    } finally {
      client.destroy();
    }
  });
  // A contract test pinned to s3rver 3.7.1's listing internals (devkit/engines/s3rver-continuation-tokens.ts).
  it('s3rver pages a listing with continuation tokens (no DES, which OpenSSL 3 lacks) and refuses a token it did not issue', async () => {
    const s3 = await startS3rver();
    engines.push(s3);
    const client = new S3Client(localClientConfig(s3.endpoint));
    try {
      await createBucket(client, 'paged');
      await createBucket(client, 'other');
      const keys = ['a/1', 'a/2', 'a/3', 'b/1', 'b/2'];
      await Promise.all(keys.map((Key) => client.send(new PutObjectCommand({ Bucket: 'paged', Key, Body: Key }))));

      const pages: { keys: string[]; truncated?: boolean }[] = [];
      let ContinuationToken: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: 'paged', MaxKeys: 2, ContinuationToken }));
        pages.push({ keys: (page.Contents ?? []).map((object) => object.Key!), truncated: page.IsTruncated });
        if (ContinuationToken !== undefined) expect(page.ContinuationToken).toBe(ContinuationToken);
        ContinuationToken = page.NextContinuationToken;
      } while (ContinuationToken);
      expect(pages).toEqual([
        { keys: ['a/1', 'a/2'], truncated: true },
        { keys: ['a/3', 'b/1'], truncated: true },
        { keys: ['b/2'], truncated: false },
      ]);

      const first = await client.send(new ListObjectsV2Command({ Bucket: 'paged', Prefix: 'a/', MaxKeys: 1 }));
      const rest = await client.send(new ListObjectsV2Command({ Bucket: 'paged', Prefix: 'a/', ContinuationToken: first.NextContinuationToken }));
      expect(rest.Contents?.map((object) => object.Key)).toEqual(['a/2', 'a/3']);

      for (const [Bucket, token] of [['paged', 'not-a-token'], ['other', first.NextContinuationToken!]] as const) {
        await expect(client.send(new ListObjectsV2Command({ Bucket, ContinuationToken: token }))).rejects.toMatchObject({ name: 'InvalidArgument', $metadata: { httpStatusCode: 400 } });
      }
    } finally {
      client.destroy();
    }
  });

  it('s3rver and kinesalite keep an idle keep-alive connection past Node\'s 5 s default, so a pooled socket is never reset under a client', async () => {
    const engines = [await startS3rver(), await startKinesalite()];
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = (endpoint: string) =>
      new Promise<boolean>((resolve, reject) => {
        const sent = httpRequest(endpoint, { agent }, (response) => {
          response.resume();
          response.on('end', () => resolve(sent.reusedSocket));
        });
        sent.on('error', reject);
        sent.end();
      });
    try {
      const first = await Promise.all(engines.map((engine) => get(engine.endpoint)));
      expect(first).toEqual([false, false]);
      await sleep(6_000);
      // With Node's default the servers closed both sockets at 5 s, and these would be new ones.
      expect(await Promise.all(engines.map((engine) => get(engine.endpoint)))).toEqual([true, true]);
    } finally {
      agent.destroy();
      await Promise.all(engines.map((engine) => engine.stop()));
    }
  });

  it('stops DynamoDB Local within seconds when the process that started it is killed with SIGKILL', async () => {
    const owner = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '../fixtures/engines/dynamodb-local-then-wait.ts')], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [line] = (await once(owner.stdout!, 'data')) as [Buffer];
    const endpoint = line.toString('utf8').trim();
    const client = new DynamoDBClient({ ...localClientConfig(endpoint), maxAttempts: 1 });
    const answers = () => client.send(new ListTablesCommand({})).then(() => true, () => false);
    try {
      expect(await answers()).toBe(true);
      owner.kill('SIGKILL');
      let answering = true;
      for (let waited = 0; answering && waited < 15_000; waited += 250) {
        await sleep(250);
        answering = await answers();
      }
      expect(answering).toBe(false);
    } finally {
      owner.kill('SIGKILL');
      client.destroy();
    }
  });
});
