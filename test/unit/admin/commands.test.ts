import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { DynamoDbTenancyStore } from '../../../lambda/tenancy-store/dynamodb-tenancy-store.js';
import { DEFAULT_QUOTAS, hashApiKey, type NewApiKeySecret } from '../../../lambda/shared/domain/tenancy.js';
import {
  AdminCommandError,
  type AdminDeps,
  createApiKey,
  createOrganization,
  createPlan,
  createWorkspace,
  listApiKeys,
  listPlans,
  migrateOrganizations,
  revokeApiKey,
  showOrganization,
  showPlan,
  updateOrganization,
  updatePlan,
} from '../../../scripts/admin/commands.js';

const TABLE = 'tenancy';
const NOW = new Date('2026-03-01T12:00:00.000Z');
const SECRET = `tik_${'a'.repeat(43)}`;

const dynamodb = mockClient(DynamoDBClient);

function deps(): AdminDeps {
  const newSecret = (): NewApiKeySecret => ({ secret: SECRET, secretHash: hashApiKey(SECRET), keyId: 'key_1', displayPrefix: SECRET.slice(0, 12) });
  return { store: new DynamoDbTenancyStore(new DynamoDBClient({}), TABLE), now: () => NOW, newSecret };
}

const orgItem = (extra: Record<string, { S: string } | { N: string } | undefined> = {}) => ({
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

const PLAN_KEY = (name: string) => ({ Key: { pk: { S: 'PLANS' }, sk: { S: `PLAN#${name}` } } });
const ORG_KEY = { Key: { pk: { S: 'ORG#acme' }, sk: { S: 'ORG' } } };
const planItem = (name: string, quotas: Record<string, string>) => ({
  pk: { S: 'PLANS' },
  sk: { S: `PLAN#${name}` },
  plan_name: { S: name },
  ...Object.fromEntries(Object.entries(quotas).map(([window, n]) => [`quota_${window}`, { N: n }])),
  created_at: { S: '2026-01-01T00:00:00.000Z' },
  updated_at: { S: '2026-01-01T00:00:00.000Z' },
});
/** An organization item as written since plans are records: a plan reference and an overrides map. */
const planOrgItem = (overrides: Record<string, { N: string } | { NULL: true }> = {}, plan = 'team') => ({
  ...orgItem({ plan: { S: plan } }),
  quota_minute: undefined,
  quota_hour: undefined,
  overrides: { M: overrides },
});
const clean = (item: Record<string, AttributeValue | undefined>) => Object.fromEntries(Object.entries(item).filter(([, v]) => v !== undefined)) as Record<string, AttributeValue>;
const conflict = () => new ConditionalCheckFailedException({ message: 'condition', $metadata: {} });

describe('plan create, update, show and list', () => {
  it('creates a plan with all four windows, refusing an existing name', async () => {
    dynamodb.on(PutItemCommand).resolves({});
    const view = await createPlan(deps(), 'team', { minute: 50, hour: 1000, day: 10_000, month: null });
    expect(view).toEqual({ plan: 'team', quotas: { minute: 50, hour: 1000, day: 10_000, month: null }, retention_days: null, created_at: NOW.toISOString(), updated_at: NOW.toISOString() });
    expect(dynamodb).toHaveReceivedCommandWith(PutItemCommand, {
      TableName: TABLE,
      ConditionExpression: 'attribute_not_exists(pk)',
      Item: {
        pk: { S: 'PLANS' },
        sk: { S: 'PLAN#team' },
        plan_name: { S: 'team' },
        quota_minute: { N: '50' },
        quota_hour: { N: '1000' },
        quota_day: { N: '10000' },
        created_at: { S: NOW.toISOString() },
        updated_at: { S: NOW.toISOString() },
      },
    });
    dynamodb.on(PutItemCommand).rejects(conflict());
    await expect(createPlan(deps(), 'team', { minute: 1, hour: 1, day: 1, month: 1 })).rejects.toThrow('plan team already exists');
  });

  it('refuses a plan that leaves a window unsaid, or a bad quota, before writing', async () => {
    await expect(createPlan(deps(), 'team', { minute: 5 })).rejects.toThrow('plan create needs every window\'s quota: give --per-hour, --per-day, --per-month');
    await expect(createPlan(deps(), 'team', { minute: -1, hour: 1, day: 1, month: 1 })).rejects.toThrow('the minute quota must be a whole number >= 0 or "none"');
    await expect(createPlan(deps(), 'no spaces', { minute: 1, hour: 1, day: 1, month: 1 })).rejects.toThrow("invalid plan name 'no spaces'");
    expect(dynamodb).not.toHaveReceivedAnyCommand();
  });

  it('updates only the windows given, only on an existing plan, and says how soon ingest follows', async () => {
    dynamodb.on(GetItemCommand, PLAN_KEY('team')).resolves({ Item: planItem('team', { minute: '50', hour: '1000' }) });
    dynamodb.on(PutItemCommand).resolves({});
    const view = await updatePlan(deps(), 'team', { minute: 80, day: 5 });
    expect(view).toMatchObject({ quotas: { minute: 80, hour: 1000, day: 5, month: null }, updated_at: NOW.toISOString(), takes_effect_within_seconds: 30 });
    expect(dynamodb).toHaveReceivedCommandWith(PutItemCommand, { ConditionExpression: 'attribute_exists(pk)', Item: expect.objectContaining({ quota_minute: { N: '80' }, quota_day: { N: '5' } }) });

    dynamodb.on(GetItemCommand, PLAN_KEY('ghost')).resolves({});
    await expect(updatePlan(deps(), 'ghost', { minute: 1 })).rejects.toThrow("plan 'ghost' does not exist");
    await expect(updatePlan(deps(), 'team', {})).rejects.toThrow('plan update changes nothing without a quota');
  });

  it('lists the plans from their one partition, by name', async () => {
    dynamodb.on(QueryCommand).resolves({ Items: [planItem('team', { minute: '5' }), planItem('free', { minute: '1' })] });
    const { plans } = await listPlans(deps());
    expect(plans.map((plan) => plan.plan)).toEqual(['free', 'team']);
    expect(dynamodb).toHaveReceivedCommandWith(QueryCommand, { KeyConditionExpression: 'pk = :pk AND begins_with(sk, :plan)', ExpressionAttributeValues: { ':pk': { S: 'PLANS' }, ':plan': { S: 'PLAN#' } } });
    dynamodb.on(GetItemCommand, PLAN_KEY('team')).resolves({ Item: planItem('team', { minute: '5' }) });
    await expect(showPlan(deps(), 'team')).resolves.toMatchObject({ plan: 'team', quotas: { minute: 5, hour: null } });
  });
});

describe('org create', () => {
  it('puts the organization on an existing plan with the overrides given, refusing an existing id', async () => {
    dynamodb.on(GetItemCommand, PLAN_KEY('team')).resolves({ Item: planItem('team', { minute: '50', hour: '1000', day: '10000', month: '100000' }) });
    dynamodb.on(PutItemCommand).resolves({});
    const view = await createOrganization(deps(), 'acme', { plan: 'team', overrides: { minute: 5, month: null } });

    expect(view).toEqual({
      org_id: 'acme',
      plan: 'team',
      plan_status: 'active',
      billing_status: 'ok',
      overrides: { minute: 5, month: null },
      quotas: { minute: 5, hour: 1000, day: 10_000, month: null },
      retention: { days: null, source: 'plan', plan_days: null, stack_ceiling_days: null },
      created_at: NOW.toISOString(),
      updated_at: NOW.toISOString(),
    });
    expect(dynamodb).toHaveReceivedCommandWith(PutItemCommand, {
      TableName: TABLE,
      ConditionExpression: 'attribute_not_exists(pk)',
      Item: clean({
        ...planOrgItem({ minute: { N: '5' }, month: { NULL: true } }),
        created_at: { S: NOW.toISOString() },
        updated_at: { S: NOW.toISOString() },
      }),
    });
    dynamodb.on(PutItemCommand).rejects(conflict());
    await expect(createOrganization(deps(), 'acme', { plan: 'team' })).rejects.toThrow('organization acme already exists');
  });

  it('refuses a plan that does not exist, writing nothing', async () => {
    dynamodb.on(GetItemCommand).resolves({});
    await expect(createOrganization(deps(), 'acme', { plan: 'gold' })).rejects.toThrow("plan 'gold' does not exist; create it first with: plan create --plan gold");
    expect(dynamodb).not.toHaveReceivedCommand(PutItemCommand);
  });

  it('creates the default plan with the default quotas the first time an organization goes on it', async () => {
    dynamodb.on(GetItemCommand).resolves({});
    dynamodb.on(PutItemCommand).resolves({});
    const view = await createOrganization(deps(), 'acme');
    expect(view).toMatchObject({ plan: 'default', overrides: {}, quotas: DEFAULT_QUOTAS });
    expect(dynamodb).toHaveReceivedCommandWith(PutItemCommand, { ConditionExpression: 'attribute_not_exists(pk)', Item: expect.objectContaining({ sk: { S: 'PLAN#default' } }) });
  });

  it.each(['NULL', 'null', 'Null', 'nUlL', '__HIVE_DEFAULT_PARTITION__', '__hive_default_partition__', '__Hive_Default_Partition__'])(
    'refuses %p, which partition readers read as SQL NULL, before writing anything',
    async (orgId) => {
      await expect(createOrganization(deps(), orgId)).rejects.toThrow(new AdminCommandError(`organization id '${orgId}' is reserved: DuckDB, Hive and Athena read it in a partition path (org_id=${orgId}/) as SQL NULL, so its data could not be told apart; choose another id`));
      expect(dynamodb).not.toHaveReceivedAnyCommand();
    },
  );

  it.each(['NULLx', 'nul', 'None', 'hive_default_partition', '0'])('accepts %p, which partition readers read as text', async (orgId) => {
    dynamodb.on(GetItemCommand, PLAN_KEY('team')).resolves({ Item: planItem('team', { minute: '50', hour: '1000', day: '10000', month: '100000' }) });
    dynamodb.on(PutItemCommand).resolves({});
    await expect(createOrganization(deps(), orgId, { plan: 'team' })).resolves.toMatchObject({ org_id: orgId });
  });

  it('rejects an invalid id before writing anything', async () => {
    await expect(createOrganization(deps(), 'no spaces')).rejects.toBeInstanceOf(AdminCommandError);
    expect(dynamodb).not.toHaveReceivedAnyCommand();
  });
});

describe('org update', () => {
  it('changes only the settings given, sets and drops overrides, and keeps the rest', async () => {
    dynamodb.on(GetItemCommand, ORG_KEY).resolves({ Item: clean(planOrgItem({ minute: { N: '100' }, hour: { N: '7' } })) });
    dynamodb.on(GetItemCommand, PLAN_KEY('team')).resolves({ Item: planItem('team', { minute: '50', hour: '1000', day: '10000', month: '100000' }) });
    dynamodb.on(PutItemCommand).resolves({});
    const view = await updateOrganization(deps(), 'acme', { billingStatus: 'past_due', overrides: { hour: 'plan', day: null } });

    expect(view).toMatchObject({
      plan: 'team',
      billing_status: 'past_due',
      overrides: { minute: 100, day: null },
      quotas: { minute: 100, hour: 1000, day: null, month: 100_000 },
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: NOW.toISOString(),
      takes_effect_within_seconds: 30,
    });
    const put = dynamodb.commandCalls(PutItemCommand)[0]?.args[0].input;
    expect(put?.ConditionExpression).toBeUndefined();
    expect(put?.Item).toMatchObject({ billing_status: { S: 'past_due' }, overrides: { M: { minute: { N: '100' }, day: { NULL: true } } } });
    expect(put?.Item).not.toHaveProperty('quota_minute');
  });

  it('moves an organization only to a plan that exists', async () => {
    dynamodb.on(GetItemCommand, ORG_KEY).resolves({ Item: clean(planOrgItem()) });
    dynamodb.on(GetItemCommand, PLAN_KEY('gold')).resolves({});
    await expect(updateOrganization(deps(), 'acme', { plan: 'gold' })).rejects.toThrow("plan 'gold' does not exist");
    expect(dynamodb).not.toHaveReceivedCommand(PutItemCommand);
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

describe('org migrate: organizations written before plans were records', () => {
  it('reads a legacy organization\'s four numbers as overrides of every window, so its quotas do not change', async () => {
    dynamodb.on(GetItemCommand, ORG_KEY).resolves({ Item: orgItem() });
    dynamodb.on(GetItemCommand, PLAN_KEY('team')).resolves({ Item: planItem('team', { minute: '1', hour: '1', day: '1', month: '1' }) });
    dynamodb.on(QueryCommand).resolves({ Items: [] });
    await expect(showOrganization(deps(), 'acme')).resolves.toMatchObject({
      overrides: { minute: 100, hour: 1000, day: null, month: null },
      quotas: { minute: 100, hour: 1000, day: null, month: null },
    });
  });

  it('rewrites each legacy organization once, conditionally, and reports it; a dry run writes nothing', async () => {
    dynamodb.on(ScanCommand).resolves({ Items: [orgItem()] });
    dynamodb.on(QueryCommand).resolves({ Items: [] });
    dynamodb.on(UpdateItemCommand).resolves({});

    const dry = await migrateOrganizations(deps(), { dryRun: true });
    expect(dry.organizations).toEqual([expect.objectContaining({ org_id: 'acme', migrated: false, quotas: { minute: 100, hour: 1000, day: null, month: null } })]);
    expect(dynamodb).not.toHaveReceivedCommand(UpdateItemCommand);

    const done = await migrateOrganizations(deps(), { dryRun: false });
    expect(done.organizations).toEqual([expect.objectContaining({ org_id: 'acme', plan: 'team', migrated: true })]);
    expect(dynamodb).toHaveReceivedCommandWith(ScanCommand, { FilterExpression: 'sk = :org AND attribute_not_exists(#overrides)' });
    expect(dynamodb).toHaveReceivedCommandWith(UpdateItemCommand, {
      Key: { pk: { S: 'ORG#acme' }, sk: { S: 'ORG' } },
      UpdateExpression: 'SET #overrides = :overrides REMOVE quota_minute, quota_hour, quota_day, quota_month',
      ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#overrides)',
      ExpressionAttributeValues: { ':overrides': { M: { minute: { N: '100' }, hour: { N: '1000' }, day: { NULL: true }, month: { NULL: true } } } },
    });

    dynamodb.on(UpdateItemCommand).rejects(conflict());
    const again = await migrateOrganizations(deps(), { dryRun: false });
    expect(again.organizations[0]?.migrated).toBe(false);
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

describe('retention of plans and organizations', () => {
  it('stores a plan\'s retention, changes it alone on update, and "none" removes it', async () => {
    dynamodb.on(PutItemCommand).resolves({});
    const created = await createPlan(deps(), 'team', { minute: 1, hour: 1, day: 1, month: 1 }, { retentionDays: 30 });
    expect(created.retention_days).toBe(30);
    expect(dynamodb).toHaveReceivedCommandWith(PutItemCommand, { Item: expect.objectContaining({ retention_days: { N: '30' } }) });

    dynamodb.reset();
    dynamodb.on(GetItemCommand, PLAN_KEY('team')).resolves({ Item: { ...planItem('team', { minute: '5' }), retention_days: { N: '30' } } });
    dynamodb.on(PutItemCommand).resolves({});
    await expect(updatePlan(deps(), 'team', {}, { retentionDays: 7 })).resolves.toMatchObject({ quotas: { minute: 5 }, retention_days: 7 });
    await expect(updatePlan(deps(), 'team', { minute: 9 })).resolves.toMatchObject({ quotas: { minute: 9 }, retention_days: 30 });
    await expect(updatePlan(deps(), 'team', {}, { retentionDays: null })).resolves.toMatchObject({ retention_days: null });
    const lastPut = dynamodb.commandCalls(PutItemCommand).at(-1)!.args[0].input.Item!;
    expect(lastPut.retention_days).toBeUndefined();
    await expect(createPlan(deps(), 'x', { minute: 1, hour: 1, day: 1, month: 1 }, { retentionDays: 0 })).rejects.toThrow('the retention must be a whole number of days from 1 to 36500 or "none"');
  });

  it('says what retention applies to an organization and where it comes from: plan, organization or the stack\'s ceiling', async () => {
    dynamodb.on(GetItemCommand, PLAN_KEY('team')).resolves({ Item: { ...planItem('team', { minute: '5' }), retention_days: { N: '30' } } });
    dynamodb.on(QueryCommand).resolves({ Items: [] });
    const org = (retention?: AttributeValue) => dynamodb.on(GetItemCommand, ORG_KEY).resolves({ Item: clean({ ...planOrgItem(), retention_days: retention }) });

    org();
    await expect(showOrganization(deps(), 'acme')).resolves.toMatchObject({ retention: { days: 30, source: 'plan', plan_days: 30, stack_ceiling_days: null } });
    org({ N: '400' });
    await expect(showOrganization(deps(), 'acme')).resolves.toMatchObject({ retention: { days: 400, source: 'organization', plan_days: 30, organization_days: 400 } });
    await expect(showOrganization({ ...deps(), retentionCeilingDays: 90 }, 'acme')).resolves.toMatchObject({ retention: { days: 90, source: 'stack', stack_ceiling_days: 90 } });
    org({ NULL: true });
    await expect(showOrganization(deps(), 'acme')).resolves.toMatchObject({ retention: { days: null, source: 'organization', organization_days: null } });
  });

  it('overrides the plan\'s retention on org update, and "plan" drops the override', async () => {
    dynamodb.on(GetItemCommand, PLAN_KEY('team')).resolves({ Item: { ...planItem('team', { minute: '5' }), retention_days: { N: '30' } } });
    dynamodb.on(GetItemCommand, ORG_KEY).resolves({ Item: clean(planOrgItem()) });
    dynamodb.on(PutItemCommand).resolves({});
    await expect(updateOrganization(deps(), 'acme', { retentionDays: 7 })).resolves.toMatchObject({ retention: { days: 7, source: 'organization' } });
    expect(dynamodb).toHaveReceivedCommandWith(PutItemCommand, { Item: expect.objectContaining({ retention_days: { N: '7' } }) });
    await expect(updateOrganization(deps(), 'acme', { retentionDays: null })).resolves.toMatchObject({ retention: { days: null, source: 'organization' } });
    expect(dynamodb).toHaveReceivedCommandWith(PutItemCommand, { Item: expect.objectContaining({ retention_days: { NULL: true } }) });

    dynamodb.on(GetItemCommand, ORG_KEY).resolves({ Item: clean({ ...planOrgItem(), retention_days: { N: '7' } }) });
    await expect(updateOrganization(deps(), 'acme', { retentionDays: 'plan' })).resolves.toMatchObject({ retention: { days: 30, source: 'plan' } });
    expect(dynamodb.commandCalls(PutItemCommand).at(-1)!.args[0].input.Item!.retention_days).toBeUndefined();
  });

  it('shows a stored retention_days that is not a retention as such, and as kept: the sweep deletes nothing of the organization', async () => {
    dynamodb.on(QueryCommand).resolves({ Items: [] });
    const plan = (retention: AttributeValue) => dynamodb.on(GetItemCommand, PLAN_KEY('team')).resolves({ Item: { ...planItem('team', { minute: '5' }), retention_days: retention } });
    plan({ N: '30' });
    dynamodb.on(GetItemCommand, ORG_KEY).resolves({ Item: clean({ ...planOrgItem(), retention_days: { N: '0' } }) });
    await expect(showOrganization(deps(), 'acme')).resolves.toMatchObject({ retention: { days: null, source: 'organization', plan_days: 30, invalid: { item: 'organization', stored_retention_days: '{"N":"0"}' } } });

    plan({ S: '30' });
    dynamodb.on(GetItemCommand, ORG_KEY).resolves({ Item: clean({ ...planOrgItem(), retention_days: { N: '400' } }) });
    await expect(showOrganization({ ...deps(), retentionCeilingDays: 90 }, 'acme')).resolves.toMatchObject({ retention: { days: null, source: 'plan', plan_days: null, organization_days: 400, invalid: { item: 'plan', stored_retention_days: '{"S":"30"}' } } });
    await expect(showPlan(deps(), 'team')).resolves.toMatchObject({ retention_days: null, invalid_retention_days: '{"S":"30"}' });
  });

  it('shows a stored setting the CLI would refuse, refuses a change that would store its stand-in, and replaces it when told', async () => {
    dynamodb.on(QueryCommand).resolves({ Items: [] });
    dynamodb.on(GetItemCommand, PLAN_KEY('team')).resolves({ Item: { ...planItem('team', { minute: '5' }), quota_hour: { S: '100' } } });
    dynamodb.on(GetItemCommand, ORG_KEY).resolves({ Item: clean({ ...planOrgItem(), overrides: { M: { minute: { S: '5' } } } }) });
    dynamodb.on(PutItemCommand).resolves({});
    await expect(showOrganization(deps(), 'acme')).resolves.toMatchObject({ invalid_setting: { attribute: 'overrides.minute', stored: '{"S":"5"}' } });
    await expect(showPlan(deps(), 'team')).resolves.toMatchObject({ invalid_setting: { attribute: 'quota_hour', stored: '{"S":"100"}' } });

    // Read as a quota of 0, the override would be written back as 0 by a change of anything else.
    await expect(updateOrganization(deps(), 'acme', { billingStatus: 'past_due' })).rejects.toThrow(
      new AdminCommandError(`organization 'acme' has a stored overrides.minute of {"S":"5"}, which the CLI would refuse (ingest refuses it and the sweep skips it until it is fixed): give the option that sets overrides.minute with this change`),
    );
    await expect(updateOrganization(deps(), 'acme', { overrides: { hour: 9 } })).rejects.toThrow('stored overrides.minute');
    await expect(updatePlan(deps(), 'team', { minute: 9 })).rejects.toThrow(`plan 'team' has a stored quota_hour of {"S":"100"}, which the CLI would refuse`);
    expect(dynamodb).not.toHaveReceivedCommand(PutItemCommand);

    const fixed = await updateOrganization(deps(), 'acme', { overrides: { minute: 7 } });
    expect(fixed).not.toHaveProperty('invalid_setting');
    expect(dynamodb).toHaveReceivedCommandWith(PutItemCommand, { Item: expect.objectContaining({ org_id: { S: 'acme' }, overrides: { M: { minute: { N: '7' } } } }) });
    const plan = await updatePlan(deps(), 'team', { hour: 100 });
    expect(plan).not.toHaveProperty('invalid_setting');
    expect(dynamodb.commandCalls(PutItemCommand).at(-1)!.args[0].input.Item!.quota_hour).toEqual({ N: '100' });
  });

  it('refuses a change that would silently replace an invalid stored retention_days, and replaces it when told', async () => {
    dynamodb.on(GetItemCommand, PLAN_KEY('team')).resolves({ Item: { ...planItem('team', { minute: '5' }), retention_days: { N: '-1' } } });
    dynamodb.on(GetItemCommand, ORG_KEY).resolves({ Item: clean({ ...planOrgItem(), retention_days: { N: '0' } }) });
    dynamodb.on(PutItemCommand).resolves({});
    await expect(updateOrganization(deps(), 'acme', { billingStatus: 'past_due' })).rejects.toThrow(
      new AdminCommandError(`organization 'acme' has a stored retention_days of {"N":"0"}, which is not a retention (the sweep deletes nothing of it until it is fixed): give --retention-days N, none or plan with this change`),
    );
    await expect(updatePlan(deps(), 'team', { minute: 9 })).rejects.toThrow(`plan 'team' has a stored retention_days of {"N":"-1"}, which is not a retention`);
    expect(dynamodb).not.toHaveReceivedCommand(PutItemCommand);

    // Its own item fixed, the organization still waits for its plan's.
    await expect(updateOrganization(deps(), 'acme', { retentionDays: null })).resolves.toMatchObject({ retention: { days: null, source: 'plan', organization_days: null, invalid: { item: 'plan', stored_retention_days: '{"N":"-1"}' } } });
    expect(dynamodb).toHaveReceivedCommandWith(PutItemCommand, { Item: expect.objectContaining({ org_id: { S: 'acme' }, retention_days: { NULL: true } }) });
    const updated = await updatePlan(deps(), 'team', { minute: 9 }, { retentionDays: 14 });
    expect(updated).toMatchObject({ retention_days: 14 });
    expect(updated).not.toHaveProperty('invalid_retention_days');
    expect(dynamodb.commandCalls(PutItemCommand).at(-1)!.args[0].input.Item!.retention_days).toEqual({ N: '14' });
  });
});
