import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { DynamoDbTenancyStore } from '../../../lambda/shared/adapters/dynamodb-tenancy-store.js';
import { hashApiKey, type NewApiKeySecret } from '../../../lambda/shared/domain/tenancy.js';
import {
  AdminCommandError,
  type AdminDeps,
  createApiKey,
  createOrganization,
  createWorkspace,
  listApiKeys,
  revokeApiKey,
  showOrganization,
  updateOrganization,
} from '../../../scripts/admin/commands.js';

const TABLE = 'tenancy';
const NOW = new Date('2026-03-01T12:00:00.000Z');
const SECRET = `tik_${'a'.repeat(43)}`;

const dynamodb = mockClient(DynamoDBClient);

function deps(): AdminDeps {
  const newSecret = (): NewApiKeySecret => ({ secret: SECRET, secretHash: hashApiKey(SECRET), keyId: 'key_1', displayPrefix: SECRET.slice(0, 12) });
  return { store: new DynamoDbTenancyStore(new DynamoDBClient({}), TABLE), now: () => NOW, newSecret };
}

const orgItem = (extra: Record<string, { S: string } | { N: string }> = {}) => ({
  pk: { S: 'ORG#acme' },
  sk: { S: 'ORG' },
  org_id: { S: 'acme' },
  plan: { S: 'team' },
  plan_status: { S: 'active' },
  billing_status: { S: 'ok' },
  quota_minute: { N: '100' },
  quota_hour: { N: '1000' },
  created_at: { S: '2026-01-01T00:00:00.000Z' },
  updated_at: { S: '2026-01-01T00:00:00.000Z' },
  ...extra,
});

beforeEach(() => dynamodb.reset());

describe('org create', () => {
  it('writes an active organization with the default quotas overridden by the options, refusing an existing id', async () => {
    dynamodb.on(PutItemCommand).resolves({});
    const view = await createOrganization(deps(), 'acme', { plan: 'team', quotas: { minute: 5, month: null } });

    expect(view).toEqual({
      org_id: 'acme',
      plan: 'team',
      plan_status: 'active',
      billing_status: 'ok',
      quotas: { minute: 5, hour: 20_000, day: 200_000, month: null },
      created_at: NOW.toISOString(),
      updated_at: NOW.toISOString(),
    });
    expect(dynamodb).toHaveReceivedCommandWith(PutItemCommand, {
      TableName: TABLE,
      ConditionExpression: 'attribute_not_exists(pk)',
      Item: orgItem({
        created_at: { S: NOW.toISOString() },
        updated_at: { S: NOW.toISOString() },
        quota_minute: { N: '5' },
        quota_hour: { N: '20000' },
        quota_day: { N: '200000' },
      }),
    });
  });

  it('reports an existing organization as a conflict', async () => {
    dynamodb.on(PutItemCommand).rejects(new ConditionalCheckFailedException({ message: 'exists', $metadata: {} }));
    await expect(createOrganization(deps(), 'acme')).rejects.toThrow('organization acme already exists');
  });

  it.each(['NULL', 'null', 'Null', 'nUlL', '__HIVE_DEFAULT_PARTITION__', '__hive_default_partition__', '__Hive_Default_Partition__'])(
    'refuses %p, which partition readers read as SQL NULL, before writing anything',
    async (orgId) => {
      await expect(createOrganization(deps(), orgId)).rejects.toThrow(new AdminCommandError(`organization id '${orgId}' is reserved: DuckDB, Hive and Athena read it in a partition path (org_id=${orgId}/) as SQL NULL, so its data could not be told apart; choose another id`));
      expect(dynamodb).not.toHaveReceivedAnyCommand();
    },
  );

  it.each(['NULLx', 'nul', 'None', 'hive_default_partition', '0'])('accepts %p, which partition readers read as text', async (orgId) => {
    await expect(createOrganization(deps(), orgId)).resolves.toMatchObject({ org_id: orgId });
  });

  it('rejects an invalid id before writing anything', async () => {
    await expect(createOrganization(deps(), 'no spaces')).rejects.toBeInstanceOf(AdminCommandError);
    expect(dynamodb).not.toHaveReceivedAnyCommand();
  });
});

describe('org update', () => {
  it('changes only the settings given and keeps the rest', async () => {
    dynamodb.on(GetItemCommand).resolves({ Item: orgItem() });
    dynamodb.on(PutItemCommand).resolves({});
    const view = await updateOrganization(deps(), 'acme', { billingStatus: 'past_due', quotas: { hour: null, day: 7 } });

    expect(view).toMatchObject({
      plan: 'team',
      billing_status: 'past_due',
      quotas: { minute: 100, hour: null, day: 7, month: null },
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: NOW.toISOString(),
    });
    const put = dynamodb.commandCalls(PutItemCommand)[0]?.args[0].input;
    expect(put?.ConditionExpression).toBeUndefined();
    expect(put?.Item).toMatchObject({ billing_status: { S: 'past_due' }, quota_minute: { N: '100' }, quota_day: { N: '7' } });
    expect(put?.Item).not.toHaveProperty('quota_hour');
  });

  it('refuses an organization that does not exist', async () => {
    dynamodb.on(GetItemCommand).resolves({});
    await expect(updateOrganization(deps(), 'ghost', { plan: 'x' })).rejects.toThrow("organization 'ghost' does not exist");
    expect(dynamodb).not.toHaveReceivedCommand(PutItemCommand);
  });

  it('refuses an update without any option, writing nothing', async () => {
    await expect(updateOrganization(deps(), 'acme', {})).rejects.toThrow(/org update changes nothing without an option/);
    expect(dynamodb).not.toHaveReceivedCommand(PutItemCommand);
  });
});

describe('org show', () => {
  it('returns the organization with its workspaces', async () => {
    dynamodb.on(GetItemCommand).resolves({ Item: orgItem() });
    dynamodb.on(QueryCommand).resolves({ Items: [{ slug: { S: 'prod' }, created_at: { S: '2026-02-01T00:00:00.000Z' } }] });
    await expect(showOrganization(deps(), 'acme')).resolves.toMatchObject({
      org_id: 'acme',
      workspaces: [{ org_id: 'acme', slug: 'prod', created_at: '2026-02-01T00:00:00.000Z' }],
    });
  });
});

describe('workspace create', () => {
  it('writes the workspace of an existing organization', async () => {
    dynamodb.on(GetItemCommand).resolves({ Item: orgItem() });
    dynamodb.on(PutItemCommand).resolves({});
    await expect(createWorkspace(deps(), 'acme', 'prod')).resolves.toEqual({ org_id: 'acme', slug: 'prod', created_at: NOW.toISOString() });
    expect(dynamodb).toHaveReceivedCommandWith(PutItemCommand, {
      TableName: TABLE,
      Item: { pk: { S: 'ORG#acme' }, sk: { S: 'WS#prod' }, org_id: { S: 'acme' }, slug: { S: 'prod' }, created_at: { S: NOW.toISOString() } },
    });
  });

  it('rejects a slug outside the pattern', async () => {
    await expect(createWorkspace(deps(), 'acme', 'Prod_1')).rejects.toThrow("invalid workspace slug 'Prod_1'");
  });
});

describe('key create', () => {
  it('stores only the hash of a workspace key and returns the secret once', async () => {
    dynamodb.on(GetItemCommand, { Key: { pk: { S: 'ORG#acme' }, sk: { S: 'ORG' } } }).resolves({ Item: orgItem() });
    dynamodb.on(GetItemCommand, { Key: { pk: { S: 'ORG#acme' }, sk: { S: 'WS#prod' } } }).resolves({ Item: { pk: { S: 'ORG#acme' } } });
    dynamodb.on(PutItemCommand).resolves({});

    const created = await createApiKey(deps(), 'acme', { workspaceSlug: 'prod', name: 'ci' });

    expect(created).toEqual({
      key_id: 'key_1',
      api_key: SECRET,
      org_id: 'acme',
      workspace_slug: 'prod',
      scope: 'workspace',
      name: 'ci',
      status: 'active',
      display_prefix: SECRET.slice(0, 12),
      created_at: NOW.toISOString(),
      revoked_at: null,
    });
    const item = dynamodb.commandCalls(PutItemCommand)[0]?.args[0].input.Item;
    expect(item?.pk).toEqual({ S: `KEY#${hashApiKey(SECRET)}` });
    expect(JSON.stringify(item)).not.toContain(SECRET);
  });

  it('refuses a workspace the organization does not have', async () => {
    dynamodb.on(GetItemCommand, { Key: { pk: { S: 'ORG#acme' }, sk: { S: 'ORG' } } }).resolves({ Item: orgItem() });
    dynamodb.on(GetItemCommand, { Key: { pk: { S: 'ORG#acme' }, sk: { S: 'WS#nope' } } }).resolves({});
    await expect(createApiKey(deps(), 'acme', { workspaceSlug: 'nope' })).rejects.toThrow("workspace 'nope' does not exist in organization 'acme'");
    expect(dynamodb).not.toHaveReceivedCommand(PutItemCommand);
  });
});

describe('key revoke and key list', () => {
  const keyItem = {
    pk: { S: 'KEY#abc' },
    sk: { S: 'KEY' },
    key_id: { S: 'key_1' },
    org_id: { S: 'acme' },
    status: { S: 'active' },
    name: { S: '' },
    display_prefix: { S: 'tik_aaaaaaaa' },
    created_at: { S: '2026-01-02T00:00:00.000Z' },
  };

  it('says so when the key was already revoked, keeping the first revoked_at', async () => {
    const earlier = '2026-01-05T00:00:00.000Z';
    dynamodb.on(QueryCommand).resolves({ Items: [keyItem] });
    dynamodb.on(UpdateItemCommand).resolves({ Attributes: { ...keyItem, status: { S: 'revoked' }, revoked_at: { S: earlier } } });
    await expect(revokeApiKey(deps(), 'key_1')).resolves.toMatchObject({ status: 'revoked', revoked_at: earlier, already_revoked: true });
  });

  it('revokes by key id through the keys-by-id index', async () => {
    dynamodb.on(QueryCommand).resolves({ Items: [keyItem] });
    dynamodb.on(UpdateItemCommand).resolves({ Attributes: { ...keyItem, status: { S: 'revoked' }, revoked_at: { S: NOW.toISOString() } } });
    await expect(revokeApiKey(deps(), 'key_1')).resolves.toMatchObject({
      key_id: 'key_1',
      status: 'revoked',
      revoked_at: NOW.toISOString(),
      already_revoked: false,
    });
    expect(dynamodb).toHaveReceivedCommandWith(QueryCommand, { IndexName: 'keys-by-id' });
    expect(dynamodb).toHaveReceivedCommandWith(UpdateItemCommand, { Key: { pk: { S: 'KEY#abc' }, sk: { S: 'KEY' } } });
  });

  it('lists the keys of an organization without any secret or hash', async () => {
    dynamodb.on(GetItemCommand).resolves({ Item: orgItem() });
    dynamodb.on(QueryCommand).resolves({ Items: [keyItem] });
    const listed = await listApiKeys(deps(), 'acme');
    expect(listed.keys).toHaveLength(1);
    expect(JSON.stringify(listed)).not.toMatch(/KEY#|tik_[A-Za-z0-9_-]{43}/);
    expect(dynamodb).toHaveReceivedCommandWith(QueryCommand, { IndexName: 'keys-by-org', ExpressionAttributeValues: { ':org': { S: 'acme' } } });
  });
});
