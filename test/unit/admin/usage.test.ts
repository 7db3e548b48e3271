import { BatchGetItemCommand, DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { DynamoDbTenancyStore } from '../../../lambda/tenancy-store/dynamodb-tenancy-store.js';
import { DynamoDbWindowUsage } from '../../../lambda/ingest/adapters/rate/dynamodb-window-usage.js';
import { organizationUsage } from '../../../scripts/admin/usage.js';

const dynamodb = mockClient(DynamoDBClient);
const NOW = new Date('2026-02-10T08:30:15.000Z');
const client = new DynamoDBClient({});

beforeEach(() => dynamodb.reset());

describe('org usage', () => {
  it('shows each window: quota, used, remaining and reset, reading the counters consistently', async () => {
    dynamodb.on(GetItemCommand, { Key: { pk: { S: 'ORG#acme' }, sk: { S: 'ORG' } } }).resolves({
      Item: { org_id: { S: 'acme' }, plan: { S: 'team' }, plan_status: { S: 'active' }, overrides: { M: { month: { NULL: true } } } },
    });
    dynamodb.on(GetItemCommand, { Key: { pk: { S: 'PLANS' }, sk: { S: 'PLAN#team' } } }).resolves({
      Item: { plan_name: { S: 'team' }, quota_minute: { N: '100' }, quota_hour: { N: '1000' }, quota_day: { N: '10000' }, quota_month: { N: '5' } },
    });
    dynamodb
      .on(BatchGetItemCommand)
      .resolvesOnce({
        Responses: { rate: [{ sk: { S: 'minute#2026-02-10T08:30Z' }, count: { N: '40' } }] },
        UnprocessedKeys: { rate: { Keys: [{ pk: { S: 'RATE#acme' }, sk: { S: 'hour#2026-02-10T08Z' } }] } },
      })
      .resolves({ Responses: { rate: [{ sk: { S: 'hour#2026-02-10T08Z' }, count: { N: '1200' } }] } });

    const usage = await organizationUsage(
      { store: new DynamoDbTenancyStore(client, 'tenancy'), usage: new DynamoDbWindowUsage(client, 'rate', true), now: () => NOW },
      'acme',
    );

    expect(usage).toEqual({
      org_id: 'acme',
      plan: 'team',
      at: NOW.toISOString(),
      windows: [
        { window: 'minute', quota: 100, used: 40, remaining: 60, resets_at: '2026-02-10T08:31:00.000Z', resets_in_seconds: 45 },
        { window: 'hour', quota: 1000, used: 1200, remaining: 0, resets_at: '2026-02-10T09:00:00.000Z', resets_in_seconds: 1785 },
        { window: 'day', quota: 10_000, used: 0, remaining: 10_000, resets_at: '2026-02-11T00:00:00.000Z', resets_in_seconds: 55_785 },
        { window: 'month', quota: null, used: null, remaining: null, resets_at: '2026-03-01T00:00:00.000Z', resets_in_seconds: 1_610_985 },
      ],
      retention: { days: null, source: 'plan', plan_days: null, stack_ceiling_days: null },
    });
    expect(dynamodb).toHaveReceivedNthCommandWith(3, BatchGetItemCommand, {
      RequestItems: {
        rate: {
          ConsistentRead: true,
          Keys: [
            { pk: { S: 'RATE#acme' }, sk: { S: 'minute#2026-02-10T08:30Z' } },
            { pk: { S: 'RATE#acme' }, sk: { S: 'hour#2026-02-10T08Z' } },
            { pk: { S: 'RATE#acme' }, sk: { S: 'day#2026-02-10' } },
          ],
          ProjectionExpression: 'sk, #count',
          ExpressionAttributeNames: { '#count': 'count' },
        },
      },
    });
  });
});

it('org usage says so when the organization\'s plan does not exist, instead of showing no quotas', async () => {
  dynamodb.on(GetItemCommand, { Key: { pk: { S: 'ORG#acme' }, sk: { S: 'ORG' } } }).resolves({
    Item: { org_id: { S: 'acme' }, plan: { S: 'gold' }, plan_status: { S: 'active' }, overrides: { M: {} } },
  });
  dynamodb.on(GetItemCommand, { Key: { pk: { S: 'PLANS' }, sk: { S: 'PLAN#gold' } } }).resolves({});
  await expect(
    organizationUsage({ store: new DynamoDbTenancyStore(client, 'tenancy'), usage: new DynamoDbWindowUsage(client, 'rate', true), now: () => NOW }, 'acme'),
  ).rejects.toThrow("organization 'acme' is on plan 'gold', which does not exist");
  expect(dynamodb).not.toHaveReceivedCommand(BatchGetItemCommand);
});
