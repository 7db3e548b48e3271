import { ConditionalCheckFailedException, type DynamoDBClient, PutItemCommand, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { DynamoModel } from '../../../devkit/dynamo/model.js';
import { seededRandom, VirtualClock } from '../../../devkit/dynamo/virtual-clock.js';
import type { ApiKey, Organization, Plan } from '../../../lambda/shared/domain/tenancy.js';
import { DynamoDbTenancyStore, TenancyConflictError, TenancyNotFoundError } from '../../../lambda/tenancy-store/dynamodb-tenancy-store.js';
import type { Item } from '../../../lambda/tenancy-store/tenancy-items.js';

/**
 * The tenancy store's writes on the devkit's DynamoDB model, which evaluates the condition and update expressions
 * they send: what is created, refused and changed is what the expressions let through, not what a mock was told to
 * answer. The model answers no queries: the one revoke sends (`keys-by-id`) is answered here from the model's items.
 */

const TABLE = 'tenancy';
const AT = '2026-12-01T00:00:00.000Z';
const LATER = '2026-12-02T00:00:00.000Z';

/** The model on a virtual clock, each call run through it (the model's calls wait on that clock). */
function newModel() {
  const clock = new VirtualClock(0);
  const model = new DynamoModel(clock, { random: seededRandom(38), roundTripMs: 0 });
  return { model, send: (command: unknown) => clock.runThrough(model.client().send(command as never)) };
}

function setup(options: { failWith?: (command: unknown) => Error | undefined } = {}) {
  const { model, send } = newModel();
  const sent: unknown[] = [];
  const client = {
    send: async (command: unknown) => {
      sent.push(command);
      const failure = options.failWith?.(command);
      if (failure) throw failure;
      if (command instanceof QueryCommand && command.input.IndexName === 'keys-by-id') {
        const id = command.input.ExpressionAttributeValues?.[':id']?.S;
        return { $metadata: {}, Items: model.items(TABLE).filter((item) => item.key_id?.S === id) };
      }
      return send(command);
    },
  } as unknown as DynamoDBClient;
  return { model, sent, send, store: new DynamoDbTenancyStore(client, TABLE), item: (pk: string, sk: string) => model.get(TABLE, { pk: { S: pk }, sk: { S: sk } }) };
}

const throttled = () => Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });

const organization = (overrides: Partial<Organization> = {}): Organization => ({
  orgId: 'acme',
  plan: 'team',
  overrides: { minute: 5, hour: null },
  planStatus: 'active',
  billingStatus: 'ok',
  createdAt: AT,
  updatedAt: AT,
  ...overrides,
});

const plan = (overrides: Partial<Plan> = {}): Plan => ({ name: 'team', quotas: { minute: 10, hour: null, day: 0, month: 1_000 }, createdAt: AT, updatedAt: AT, ...overrides });

const apiKey = (overrides: Partial<ApiKey> = {}): ApiKey => ({
  keyId: 'key_1',
  orgId: 'acme',
  workspaceSlug: null,
  status: 'active',
  name: 'ci',
  displayPrefix: 'tik_abcdefgh',
  createdAt: AT,
  ...overrides,
});

describe('putOrganization', () => {
  it('writes every field: overrides as a map (NULL for unlimited), the retention, both statuses', async () => {
    const s = setup();
    await s.store.putOrganization(organization({ retentionDays: 30 }), { createOnly: true });
    expect(s.item('ORG#acme', 'ORG')).toEqual({
      pk: { S: 'ORG#acme' },
      sk: { S: 'ORG' },
      org_id: { S: 'acme' },
      plan: { S: 'team' },
      overrides: { M: { minute: { N: '5' }, hour: { NULL: true } } },
      retention_days: { N: '30' },
      plan_status: { S: 'active' },
      billing_status: { S: 'ok' },
      created_at: { S: AT },
      updated_at: { S: AT },
    });
  });

  it('writes a retention of null as NULL (kept) and none when it follows the plan', async () => {
    const s = setup();
    await s.store.putOrganization(organization({ retentionDays: null }), { createOnly: true });
    expect(s.item('ORG#acme', 'ORG')?.retention_days).toEqual({ NULL: true });
    await s.store.putOrganization(organization({ updatedAt: LATER }), { createOnly: false });
    expect(s.item('ORG#acme', 'ORG')).not.toHaveProperty('retention_days');
  });

  it('refuses an existing id on create, keeping the stored item, and replaces it otherwise', async () => {
    const s = setup();
    await s.store.putOrganization(organization(), { createOnly: true });
    const refused = s.store.putOrganization(organization({ plan: 'other' }), { createOnly: true });
    await expect(refused).rejects.toThrow(TenancyConflictError);
    await expect(refused).rejects.toMatchObject({ name: 'TenancyConflictError', message: 'organization acme already exists', cause: expect.any(ConditionalCheckFailedException) });
    expect(s.item('ORG#acme', 'ORG')?.plan).toEqual({ S: 'team' });
    await s.store.putOrganization(organization({ plan: 'other' }), { createOnly: false });
    expect(s.item('ORG#acme', 'ORG')?.plan).toEqual({ S: 'other' });
  });

  it('passes any other failure on as it is', async () => {
    const failure = throttled();
    await expect(setup({ failWith: () => failure }).store.putOrganization(organization(), { createOnly: true })).rejects.toBe(failure);
  });
});

describe('putPlan', () => {
  it('writes the quotas as numbers, leaving out unlimited ones, and the retention', async () => {
    const s = setup();
    await s.store.putPlan(plan({ retentionDays: 7 }), 'create');
    expect(s.item('PLANS', 'PLAN#team')).toEqual({
      pk: { S: 'PLANS' },
      sk: { S: 'PLAN#team' },
      plan_name: { S: 'team' },
      quota_minute: { N: '10' },
      quota_day: { N: '0' },
      quota_month: { N: '1000' },
      retention_days: { N: '7' },
      created_at: { S: AT },
      updated_at: { S: AT },
    });
  });

  it('creates only a new name and updates only an existing one', async () => {
    const s = setup();
    const missing = s.store.putPlan(plan(), 'update');
    await expect(missing).rejects.toThrow(TenancyNotFoundError);
    await expect(missing).rejects.toMatchObject({ name: 'TenancyNotFoundError', message: 'plan team does not exist', cause: expect.any(ConditionalCheckFailedException) });
    expect(s.item('PLANS', 'PLAN#team')).toBeUndefined();
    await s.store.putPlan(plan(), 'create');
    const again = s.store.putPlan(plan({ updatedAt: LATER }), 'create');
    await expect(again).rejects.toThrow(TenancyConflictError);
    await expect(again).rejects.toMatchObject({ message: 'plan team already exists', cause: expect.any(ConditionalCheckFailedException) });
    expect(s.item('PLANS', 'PLAN#team')?.updated_at).toEqual({ S: AT });
    await s.store.putPlan(plan({ updatedAt: LATER }), 'update');
    expect(s.item('PLANS', 'PLAN#team')?.updated_at).toEqual({ S: LATER });
  });

  it('passes any other failure on as it is, in either mode', async () => {
    const failure = throttled();
    const s = setup({ failWith: () => failure });
    await expect(s.store.putPlan(plan(), 'create')).rejects.toBe(failure);
    await expect(s.store.putPlan(plan(), 'update')).rejects.toBe(failure);
  });
});

describe('migrateLegacyOrganization', () => {
  const legacyItem: Item = {
    pk: { S: 'ORG#old' },
    sk: { S: 'ORG' },
    org_id: { S: 'old' },
    plan: { S: 'team' },
    quota_minute: { N: '1' },
    quota_hour: { N: '2' },
    quota_day: { N: '3' },
    quota_month: { N: '4' },
    plan_status: { S: 'active' },
  };
  const legacy = organization({ orgId: 'old', overrides: { minute: 1, hour: 2, day: 3, month: 4 } });

  it('sets the overrides and removes the four old numbers, leaving the rest', async () => {
    const s = setup();
    await s.send(new PutItemCommand({ TableName: TABLE, Item: legacyItem }));
    await expect(s.store.migrateLegacyOrganization(legacy)).resolves.toBe(true);
    expect(s.item('ORG#old', 'ORG')).toEqual({
      pk: { S: 'ORG#old' },
      sk: { S: 'ORG' },
      org_id: { S: 'old' },
      plan: { S: 'team' },
      overrides: { M: { minute: { N: '1' }, hour: { N: '2' }, day: { N: '3' }, month: { N: '4' } } },
      plan_status: { S: 'active' },
    });
  });

  it('changes nothing and says so once the item has overrides (a concurrent org update, a second run)', async () => {
    const s = setup();
    await s.store.putOrganization(organization({ orgId: 'old', overrides: { minute: 9 } }), { createOnly: true });
    const before = s.item('ORG#old', 'ORG');
    await expect(s.store.migrateLegacyOrganization(legacy)).resolves.toBe(false);
    expect(s.item('ORG#old', 'ORG')).toEqual(before);
  });

  it('creates nothing for an organization deleted meanwhile', async () => {
    const s = setup();
    await expect(s.store.migrateLegacyOrganization(legacy)).resolves.toBe(false);
    expect(s.model.items(TABLE)).toEqual([]);
  });

  it('passes any other failure on as it is', async () => {
    const failure = throttled();
    await expect(setup({ failWith: () => failure }).store.migrateLegacyOrganization(legacy)).rejects.toBe(failure);
  });
});

describe('putWorkspace', () => {
  it('writes the workspace once, refusing the same slug in the organization again', async () => {
    const s = setup();
    await s.store.putWorkspace({ orgId: 'acme', slug: 'prod', createdAt: AT });
    expect(s.item('ORG#acme', 'WS#prod')).toEqual({ pk: { S: 'ORG#acme' }, sk: { S: 'WS#prod' }, org_id: { S: 'acme' }, slug: { S: 'prod' }, created_at: { S: AT } });
    const again = s.store.putWorkspace({ orgId: 'acme', slug: 'prod', createdAt: LATER });
    await expect(again).rejects.toThrow(TenancyConflictError);
    await expect(again).rejects.toMatchObject({ message: 'workspace prod already exists in acme', cause: expect.any(ConditionalCheckFailedException) });
    expect(s.item('ORG#acme', 'WS#prod')?.created_at).toEqual({ S: AT });
  });

  it('passes any other failure on as it is', async () => {
    const failure = throttled();
    await expect(setup({ failWith: () => failure }).store.putWorkspace({ orgId: 'acme', slug: 'prod', createdAt: AT })).rejects.toBe(failure);
  });
});

describe('putApiKey', () => {
  it('stores the key under its hash, with the workspace only for a workspace key, and never a second time', async () => {
    const s = setup();
    await s.store.putApiKey(apiKey(), 'hash-1');
    expect(s.item('KEY#hash-1', 'KEY')).toEqual({
      pk: { S: 'KEY#hash-1' },
      sk: { S: 'KEY' },
      key_id: { S: 'key_1' },
      key_org: { S: 'acme' },
      org_id: { S: 'acme' },
      status: { S: 'active' },
      name: { S: 'ci' },
      display_prefix: { S: 'tik_abcdefgh' },
      created_at: { S: AT },
    });
    await s.store.putApiKey(apiKey({ keyId: 'key_2', workspaceSlug: 'prod' }), 'hash-2');
    expect(s.item('KEY#hash-2', 'KEY')?.workspace_slug).toEqual({ S: 'prod' });
    await expect(s.store.putApiKey(apiKey({ keyId: 'key_3' }), 'hash-1')).rejects.toBeInstanceOf(ConditionalCheckFailedException);
    expect(s.item('KEY#hash-1', 'KEY')?.key_id).toEqual({ S: 'key_1' });
  });
});

describe('revokeApiKey', () => {
  it('finds the key by its id, writes revoked with the moment, and returns the key as stored after the write', async () => {
    const s = setup();
    await s.store.putApiKey(apiKey(), 'hash-1');
    const revoked = await s.store.revokeApiKey('key_1', LATER);
    expect(s.item('KEY#hash-1', 'KEY')).toMatchObject({ status: { S: 'revoked' }, revoked_at: { S: LATER } });
    expect(revoked).toEqual({ ...apiKey(), status: 'revoked', revokedAt: LATER });
    const query = s.sent.find((command) => command instanceof QueryCommand) as QueryCommand;
    expect(query.input).toEqual({
      TableName: TABLE,
      IndexName: 'keys-by-id',
      KeyConditionExpression: 'key_id = :id',
      ExpressionAttributeValues: { ':id': { S: 'key_1' } },
      ExclusiveStartKey: undefined,
    });
  });

  it('keeps the first revoked_at when revoked again', async () => {
    const s = setup();
    await s.store.putApiKey(apiKey(), 'hash-1');
    await s.store.revokeApiKey('key_1', AT);
    await expect(s.store.revokeApiKey('key_1', LATER)).resolves.toMatchObject({ status: 'revoked', revokedAt: AT });
    expect(s.item('KEY#hash-1', 'KEY')?.revoked_at).toEqual({ S: AT });
  });

  it('refuses an id no key has, writing nothing', async () => {
    const s = setup();
    await expect(s.store.revokeApiKey('key_x', AT)).rejects.toThrow(TenancyNotFoundError);
    await expect(s.store.revokeApiKey('key_x', AT)).rejects.toThrow('no API key with id key_x');
    expect(s.sent.some((command) => command instanceof UpdateItemCommand)).toBe(false);
  });

  it('creates no item for a key deleted between the lookup and the write', async () => {
    const { model, send } = newModel();
    const found: Item = { pk: { S: 'KEY#hash-1' }, sk: { S: 'KEY' }, key_id: { S: 'key_1' }, status: { S: 'active' } };
    const client = {
      send: async (command: unknown) => (command instanceof QueryCommand ? { $metadata: {}, Items: [found] } : send(command)),
    } as unknown as DynamoDBClient;
    await expect(new DynamoDbTenancyStore(client, TABLE).revokeApiKey('key_1', AT)).rejects.toBeInstanceOf(ConditionalCheckFailedException);
    expect(model.items(TABLE)).toEqual([]);
  });

  it('refuses a found item without its key attributes (a projection that lost them) rather than write elsewhere', async () => {
    for (const found of [{ sk: { S: 'KEY' }, key_id: { S: 'key_1' } }, { pk: { S: 'KEY#hash-1' }, key_id: { S: 'key_1' } }]) {
      const sent: unknown[] = [];
      const client = {
        send: async (command: unknown) => {
          sent.push(command);
          return { $metadata: {}, Items: [found] };
        },
      } as unknown as DynamoDBClient;
      await expect(new DynamoDbTenancyStore(client, TABLE).revokeApiKey('key_1', AT)).rejects.toThrow(TenancyNotFoundError);
      expect(sent).toHaveLength(1);
    }
  });
});
