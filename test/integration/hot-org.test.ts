import { randomUUID } from 'node:crypto';
import {
  DynamoDBClient,
  PutItemCommand,
  QueryCommand,
  TransactionCanceledException,
  TransactionConflictException,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { DynamoDbRateLimiter } from '../../lambda/ingest/adapters/rate/dynamodb-rate-limiter.js';
import { leaseSlackPerContainer } from '../../lambda/ingest/core/rate/lease-options.js';
import { LeasingRateLimiter } from '../../lambda/ingest/core/rate/leasing-rate-limiter.js';
import { countersFor } from '../../lambda/shared/domain/rate-windows.js';
import type { Quotas } from '../../lambda/shared/domain/tenancy.js';
import { type DynamoProxy, startDynamoProxy } from '../../devkit/dynamo/proxy.js';
import { type Engine, startDynamoDbLocal } from '../../devkit/engines/engines.js';
import { createTables, localClientConfig } from '../../devkit/engines/provision.js';
import { awayFromMinuteEdge, windowCount } from '../../devkit/engines/engine-fixtures.js';
import { fakeTenancy, rateWindowsOnlyIngest } from '../../devkit/fakes/fake-tenancy.js';
import { gatewayEvent, lambdaContext, liveBatch } from '../../devkit/builders/trace-builders.js';

/** Rate windows under leases on DynamoDB Local, plain and behind the proxy that adds DynamoDB's conflicts. */

const TABLES = { tenancy: 'hot-tenancy', rate: 'hot-rate' };
const PATIENT = { maxAttempts: 40, baseDelayMs: 10, maxDelayMs: 200 };

describe('hot organizations on DynamoDB Local', () => {
  let engine: Engine;
  let proxy: DynamoProxy;
  let slowProxy: DynamoProxy;
  const clients: DynamoDBClient[] = [];
  const clientFor = (endpoint: string) => {
    const client = new DynamoDBClient({ ...localClientConfig(endpoint), maxAttempts: 1 });
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    engine = await startDynamoDbLocal();
    await createTables(clientFor(engine.endpoint), TABLES);
    proxy = await startDynamoProxy(engine.endpoint, { holdMs: 15, holdJitterMs: 5 });
    slowProxy = await startDynamoProxy(engine.endpoint, { holdMs: 1_500, holdJitterMs: 0 });
  });

  afterAll(async () => {
    for (const client of clients) client.destroy();
    await Promise.all([proxy?.stop(), slowProxy?.stop()]);
    await engine?.stop();
  });

  it('the proxy answers conflicts with the SDK exception classes DynamoDB answers with', async () => {
    const client = clientFor(slowProxy.endpoint);
    const update = (sk: string) => ({
      Update: {
        TableName: TABLES.rate,
        Key: { pk: { S: 'RATE#proxy' }, sk: { S: sk } },
        UpdateExpression: 'ADD #c :one',
        ExpressionAttributeNames: { '#c': 'count' },
        ExpressionAttributeValues: { ':one': { N: '1' } },
      },
    });
    const first = client.send(new TransactWriteItemsCommand({ TransactItems: [update('a')] }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const second = await client.send(new TransactWriteItemsCommand({ TransactItems: [update('b'), update('a')] })).catch((e: unknown) => e);
    const single = await client
      .send(new PutItemCommand({ TableName: TABLES.rate, Item: { pk: { S: 'RATE#proxy' }, sk: { S: 'a' } } }))
      .catch((e: unknown) => e);
    await first;
    expect(second).toBeInstanceOf(TransactionCanceledException);
    expect((second as TransactionCanceledException).CancellationReasons?.map((r) => r.Code)).toEqual(['None', 'TransactionConflict']);
    expect(single).toBeInstanceOf(TransactionConflictException);
  });

  for (const via of ['plain DynamoDB Local', 'the conflict proxy'] as const) {
    it(`60 containers racing batches of 10 against a quota of 255 end at exactly 250 (${via})`, async () => {
      await awayFromMinuteEdge();
      const client = clientFor(via === 'plain DynamoDB Local' ? engine.endpoint : proxy.endpoint);
      const orgId = `race-${via.length}-${Date.now()}`;
      const quotas: Quotas = { minute: 255, hour: 1000, day: null, month: null };
      const decisions = await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          new LeasingRateLimiter(new DynamoDbRateLimiter(client, TABLES.rate, PATIENT)).reserve(orgId, countersFor(quotas, new Date()), 10, `${orgId}-r-${i}`),
        ),
      );
      expect(decisions.filter((d) => d.allowed)).toHaveLength(25);
      expect(await windowCount(clientFor(engine.endpoint), TABLES.rate, orgId, 'minute')).toBe(250);
      expect(await windowCount(clientFor(engine.endpoint), TABLES.rate, orgId, 'hour')).toBe(250);
    });

    it(`leases near the quota: never over, counters equal accepted once drain() gives leases back (${via})`, async () => {
      await awayFromMinuteEdge(30_000);
      const client = clientFor(via === 'plain DynamoDB Local' ? engine.endpoint : proxy.endpoint);
      const orgId = `lease-${via.length}-${Date.now()}`;
      const quotas: Quotas = { minute: 10_000, hour: null, day: null, month: 1_000_000 };
      // DynamoDB Local never conflicts, so traffic alone marks the organization hot here.
      const containers = Array.from(
        { length: 6 },
        () => new LeasingRateLimiter(new DynamoDbRateLimiter(client, TABLES.rate, PATIENT), Date.now, { hotAboveTracesPerSecond: 100 }),
      );
      let accepted = 0;
      let refused = 0;
      await Promise.all(
        containers.map(async (limiter, c) => {
          for (let i = 0; i < 30; i++) {
            const decision = await limiter.reserve(orgId, countersFor(quotas, new Date()), 100, `${orgId}-c${c}-${i}`);
            if (decision.allowed) accepted += 100;
            else refused++;
          }
        }),
      );
      const counted = await windowCount(clientFor(engine.endpoint), TABLES.rate, orgId, 'minute');
      expect(refused).toBeGreaterThan(0);
      expect(accepted).toBeLessThanOrEqual(10_000);
      expect(counted).toBeLessThanOrEqual(10_000);
      // Before any drain(): counted ahead of accepted (and so short of the quota) by at most the stated slack per container.
      const slack = containers.length * leaseSlackPerContainer(10_000, 100);
      expect(counted - accepted).toBeLessThanOrEqual(slack);
      expect(accepted).toBeGreaterThanOrEqual(10_000 - slack);
      await Promise.all(containers.map((limiter) => limiter.drain()));
      expect(await windowCount(clientFor(engine.endpoint), TABLES.rate, orgId, 'minute')).toBe(accepted);
      expect(await windowCount(clientFor(engine.endpoint), TABLES.rate, orgId, 'month')).toBe(accepted);
    });
  }
  it('the deployed configuration (rateLeases: true) through the conflict proxy: answers 200, leases taken, counters within the stated slack', async () => {
    await awayFromMinuteEdge(30_000);
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
    const orgId = `deployed-${Date.now()}`;
    const quotas: Quotas = { minute: 1_000_000, hour: null, day: null, month: 10_000_000 };
    const { apiKey, tenancy } = fakeTenancy(orgId, quotas);
    const client = new DynamoDBClient({ ...localClientConfig(proxy.endpoint), maxAttempts: 3 });
    clients.push(client);
    // Tenancy, Kinesis and S3 are faked; the rate windows are the real adapters the deployed handler composes.
    const containers = Array.from({ length: 8 }, () =>
      rateWindowsOnlyIngest({ dynamodb: client, rateTable: TABLES.rate, tenancy, rateLeases: true, serviceName: 'it' }),
    );
    const statuses: number[] = [];
    await Promise.all(
      containers.map(async (handler) => {
        for (let i = 0; i < 40; i++) {
          const event = gatewayEvent({ apiKey, body: JSON.stringify(liveBatch(10)), requestId: randomUUID() });
          statuses.push(((await handler(event, lambdaContext)) as APIGatewayProxyResult).statusCode);
        }
      }),
    );
    // Only 200 or (after the retries run out on contention) 503: never a 429 under the quota, never a 500.
    expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
    const accepted = statuses.filter((s) => s === 200).length * 10;
    expect(accepted).toBeGreaterThan(0);
    const { Items = [] } = await clientFor(engine.endpoint).send(
      new QueryCommand({
        TableName: TABLES.rate,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :lease)',
        ExpressionAttributeValues: { ':pk': { S: `RATE#${orgId}` }, ':lease': { S: 'reservation#lease-' } },
      }),
    );
    expect(Items.length).toBeGreaterThan(0); // contention on the proxy made the organization hot
    const month = await windowCount(clientFor(engine.endpoint), TABLES.rate, orgId, 'month');
    expect(month).toBeGreaterThanOrEqual(accepted);
    expect(month - accepted).toBeLessThanOrEqual(containers.length * leaseSlackPerContainer(1_000_000, 10));
  });
});
