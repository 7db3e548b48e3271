import { setTimeout as sleep } from 'node:timers/promises';
import {
  type AttributeDefinition as DynamoAttributeDefinition,
  type CreateTableCommandInput,
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  ResourceInUseException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import {
  CreateStreamCommand,
  DescribeStreamSummaryCommand,
  KinesisClient,
  ResourceInUseException as StreamInUseException,
} from '@aws-sdk/client-kinesis';
import { BucketAlreadyExists, BucketAlreadyOwnedByYou, CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { RATE_TABLE, TENANCY_TABLE, type AttributeDefinition, type GlobalIndexDefinition, type TableDefinition } from '../../lambda/shared/tables.js';

export const LOCAL_REGION = 'us-east-1';
/** Dummy credentials: DynamoDB Local and kinesalite take any, s3rver only these. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

/** Client configuration for a local engine; `forcePathStyle` matters to S3 only and is ignored by the others. */
export interface LocalClientConfig {
  endpoint: string;
  region: string;
  credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  forcePathStyle: true;
}

export function localClientConfig(endpoint: string): LocalClientConfig {
  return {
    endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    forcePathStyle: true,
  };
}

const keySchema = (partitionKey: AttributeDefinition, sortKey?: AttributeDefinition) => [
  { AttributeName: partitionKey.name, KeyType: 'HASH' as const },
  ...(sortKey ? [{ AttributeName: sortKey.name, KeyType: 'RANGE' as const }] : []),
];

/** The attribute definitions of the given keys, each name once. */
function attributeDefinitions(keys: (AttributeDefinition | undefined)[]): DynamoAttributeDefinition[] {
  const attributes = new Map<string, AttributeDefinition>();
  for (const key of keys) if (key) attributes.set(key.name, key);
  return [...attributes.values()].map((a) => ({ AttributeName: a.name, AttributeType: a.type }));
}

function indexInput(index: GlobalIndexDefinition) {
  return { IndexName: index.indexName, KeySchema: keySchema(index.partitionKey, index.sortKey), Projection: { ProjectionType: 'ALL' as const } };
}

/** The CreateTable input for one of the shared table definitions. */
export function createTableInput(definition: TableDefinition, tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: attributeDefinitions([definition.partitionKey, definition.sortKey, ...definition.globalIndexes.flatMap((index) => [index.partitionKey, index.sortKey])]),
    KeySchema: keySchema(definition.partitionKey, definition.sortKey),
    ...(definition.globalIndexes.length > 0 ? { GlobalSecondaryIndexes: definition.globalIndexes.map(indexInput) } : {}),
  };
}

/**
 * Adds the indexes the definition has and a table kept from before it lacks, one per UpdateTable as DynamoDB
 * requires, as a CloudFormation update adds them to the deployed table; waits until each is ACTIVE.
 */
async function addMissingIndexes(dynamodb: DynamoDBClient, definition: TableDefinition, tableName: string): Promise<void> {
  const describe = async () => (await dynamodb.send(new DescribeTableCommand({ TableName: tableName }))).Table?.GlobalSecondaryIndexes ?? [];
  const existing = new Set((await describe()).map((index) => index.IndexName));
  for (const index of definition.globalIndexes.filter((candidate) => !existing.has(candidate.indexName))) {
    await dynamodb.send(
      new UpdateTableCommand({
        TableName: tableName,
        AttributeDefinitions: attributeDefinitions([index.partitionKey, index.sortKey]),
        GlobalSecondaryIndexUpdates: [{ Create: indexInput(index) }],
      }),
    );
    const deadline = Date.now() + 60_000;
    while ((await describe()).find((found) => found.IndexName === index.indexName)?.IndexStatus !== 'ACTIVE') {
      if (Date.now() > deadline) throw new Error(`index ${index.indexName} of ${tableName} is not ACTIVE after 60 s`);
      await sleep(200);
    }
  }
}

/** Creates a table from its definition unless it exists, then enables its TTL where defined. */
export async function createTable(dynamodb: DynamoDBClient, definition: TableDefinition, tableName: string): Promise<void> {
  try {
    await dynamodb.send(new CreateTableCommand(createTableInput(definition, tableName)));
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  await waitUntilTableExists({ client: dynamodb, maxWaitTime: 60, minDelay: 1, maxDelay: 2 }, { TableName: tableName });
  await addMissingIndexes(dynamodb, definition, tableName);
  if (definition.timeToLiveAttribute) {
    const { TimeToLiveDescription } = await dynamodb.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
    if (TimeToLiveDescription?.TimeToLiveStatus !== 'ENABLED') {
      await dynamodb.send(
        new UpdateTimeToLiveCommand({
          TableName: tableName,
          TimeToLiveSpecification: { AttributeName: definition.timeToLiveAttribute, Enabled: true },
        }),
      );
    }
  }
}

/** Creates the service's tables (TENANCY_TABLE, RATE_TABLE) under the given names; existing tables are kept. */
export async function createTables(dynamodb: DynamoDBClient, names: { tenancy: string; rate: string }): Promise<void> {
  await createTable(dynamodb, TENANCY_TABLE, names.tenancy);
  await createTable(dynamodb, RATE_TABLE, names.rate);
}

/** Creates a stream unless it exists and waits until it is ACTIVE. */
export async function createStream(kinesis: KinesisClient, name: string, shardCount: number, timeoutMs = 30_000): Promise<void> {
  try {
    await kinesis.send(new CreateStreamCommand({ StreamName: name, ShardCount: shardCount }));
  } catch (error) {
    if (!(error instanceof StreamInUseException)) throw error;
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { StreamDescriptionSummary } = await kinesis.send(new DescribeStreamSummaryCommand({ StreamName: name }));
    if (StreamDescriptionSummary?.StreamStatus === 'ACTIVE') return;
    if (Date.now() > deadline) throw new Error(`stream ${name} not ACTIVE after ${timeoutMs / 1000}s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Creates a bucket unless it exists. */
export async function createBucket(s3: S3Client, name: string): Promise<void> {
  try {
    await s3.send(new CreateBucketCommand({ Bucket: name }));
  } catch (error) {
    if (!(error instanceof BucketAlreadyOwnedByYou || error instanceof BucketAlreadyExists)) throw error;
  }
}
