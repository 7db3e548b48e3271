import { randomUUID } from 'node:crypto';
import { type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, GetRecordsCommand, GetShardIteratorCommand, type KinesisClient } from '@aws-sdk/client-kinesis';
import type { DynamoDbTenancyStore } from '../../lambda/tenancy-store/dynamodb-tenancy-store.js';
import { countersFor } from '../../lambda/shared/domain/rate-windows.js';
import { generateApiKeySecret, type Quotas, type RateWindow } from '../../lambda/shared/domain/tenancy.js';
import { rateKeys } from '../../lambda/shared/tables.js';

/** Helpers for integration tests against the real engines (DynamoDB Local, kinesalite). */

export interface ProvisionedOrg {
  orgId: string;
  apiKey: string;
  keyId: string;
}

/** A fresh organization with an active plan, the given quotas (others unlimited), workspaces and one org key. */
export async function provisionOrg(
  store: DynamoDbTenancyStore,
  options: { quotas?: Partial<Quotas>; workspaces?: string[] } = {},
): Promise<ProvisionedOrg> {
  const orgId = `org-${randomUUID().slice(0, 8)}`;
  const now = new Date().toISOString();
  await store.putOrganization(
    {
      orgId,
      plan: 'test',
      planStatus: 'active',
      billingStatus: 'ok',
      overrides: { minute: null, hour: null, day: null, month: null, ...options.quotas },
      createdAt: now,
      updatedAt: now,
    },
    { createOnly: true },
  );
  for (const slug of options.workspaces ?? []) await store.putWorkspace({ orgId, slug, createdAt: now });
  const secret = generateApiKeySecret();
  await store.putApiKey(
    { keyId: secret.keyId, orgId, workspaceSlug: null, status: 'active', name: 'it', displayPrefix: secret.displayPrefix, createdAt: now },
    secret.secretHash,
  );
  return { orgId, apiKey: secret.secret, keyId: secret.keyId };
}

/**
 * Waits for the next UTC minute when fewer than `marginMs` are left in this one, so a test that reads
 * the minute window after a few requests never sees it roll over in between.
 */
export async function awayFromMinuteEdge(marginMs = 15_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < marginMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}

/** The current count of one of an organization's windows, read consistently. */
export async function windowCount(dynamodb: DynamoDBClient, rateTable: string, orgId: string, window: RateWindow): Promise<number> {
  const counter = countersFor({ minute: 1, hour: 1, day: 1, month: 1 }, new Date()).find((c) => c.window === window);
  const { pk, sk } = rateKeys.window(orgId, window, counter?.windowStart ?? '');
  const { Item } = await dynamodb.send(new GetItemCommand({ TableName: rateTable, Key: { pk: { S: pk }, sk: { S: sk } }, ConsistentRead: true }));
  return Number(Item?.count?.N ?? 0);
}

export interface ShardRecords {
  shardId: string;
  records: { sequenceNumber: string; partitionKey: string; data: Uint8Array; arrivedAt: Date }[];
}

/** Everything on the stream from its start, shard by shard, in order. */
export async function readStream(kinesis: KinesisClient, streamName: string): Promise<ShardRecords[]> {
  const { StreamDescription } = await kinesis.send(new DescribeStreamCommand({ StreamName: streamName }));
  const shards: ShardRecords[] = [];
  for (const { ShardId } of StreamDescription?.Shards ?? []) {
    const shard: ShardRecords = { shardId: ShardId ?? '', records: [] };
    let { ShardIterator } = await kinesis.send(
      new GetShardIteratorCommand({ StreamName: streamName, ShardId, ShardIteratorType: 'TRIM_HORIZON' }),
    );
    while (ShardIterator) {
      const page = await kinesis.send(new GetRecordsCommand({ ShardIterator, Limit: 1000 }));
      for (const record of page.Records ?? []) {
        shard.records.push({
          sequenceNumber: record.SequenceNumber ?? '',
          partitionKey: record.PartitionKey ?? '',
          data: record.Data as Uint8Array,
          arrivedAt: record.ApproximateArrivalTimestamp ?? new Date(),
        });
      }
      ShardIterator = (page.Records ?? []).length === 0 ? undefined : page.NextShardIterator;
    }
    shards.push(shard);
  }
  return shards;
}
