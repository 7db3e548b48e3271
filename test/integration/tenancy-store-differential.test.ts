import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { DynamoModel } from '../../devkit/dynamo/model.js';
import { seededRandom, VirtualClock } from '../../devkit/dynamo/virtual-clock.js';
import { ORGANIZATIONS_INDEX, tenancyKeys } from '../../lambda/shared/tables.js';
import type { Organization } from '../../lambda/shared/domain/tenancy.js';
import { DynamoDbTenancyStore } from '../../lambda/tenancy-store/dynamodb-tenancy-store.js';
import { type Item, keyOf } from '../../lambda/tenancy-store/tenancy-items.js';
import { useEngineSuite } from '../support/engine-suite.js';

/**
 * The devkit's DynamoDB model held to DynamoDB Local on the tenancy store's real condition and update expressions:
 * every write the store sends goes to both, and both must answer alike (applied, or the same exception, with the
 * same ALL_NEW attributes) and leave the same item. The unit tests of the store run on the model
 * (test/unit/tenancy-store/dynamodb-tenancy-store.test.ts); this is what makes their verdicts DynamoDB's.
 */

const TABLES = { tenancy: 'tenancy-differential', rate: 'rate-differential' };
const AT = '2026-12-01T00:00:00.000Z';
const LATER = '2026-12-02T00:00:00.000Z';

type Outcome = { applied: true; attributes?: Item } | { applied: false; error: string };

/** The outcome to compare, and what was thrown, to throw on (the store tells exceptions apart by class). */
const outcomeOf = async (send: () => Promise<unknown>): Promise<{ outcome: Outcome; thrown?: unknown }> => {
  try {
    const answer = (await send()) as { Attributes?: Item };
    return { outcome: { applied: true, ...(answer.Attributes ? { attributes: answer.Attributes } : {}) } };
  } catch (error) {
    return { outcome: { applied: false, error: (error as Error).name }, thrown: error };
  }
};

describe('the DynamoDB model against DynamoDB Local, on the tenancy store', () => {
  const engines = useEngineSuite({ tables: TABLES });
  let model: DynamoModel;
  let clock: VirtualClock;
  let compared: { command: string; local: Outcome; model: Outcome }[];
  let afterQuery: (() => Promise<void>) | undefined;

  /** Sends each write to both, answers as DynamoDB Local did, and keeps both outcomes; reads go to DynamoDB Local only. */
  const differential = (): DynamoDBClient =>
    ({
      send: async (command: unknown) => {
        if (command instanceof QueryCommand || command instanceof GetItemCommand || command instanceof ScanCommand) {
          const answer = await engines.dynamodb.send(command as never);
          await afterQuery?.();
          return answer;
        }
        if (!(command instanceof PutItemCommand || command instanceof UpdateItemCommand || command instanceof DeleteItemCommand)) throw new Error('unexpected command');
        const local = await outcomeOf(() => engines.dynamodb.send(command as never));
        const modelled = await outcomeOf(() => clock.runThrough(model.client().send(command as never)));
        compared.push({ command: `${command.constructor.name} ${JSON.stringify(command.input.ConditionExpression ?? null)}`, local: local.outcome, model: modelled.outcome });
        if (!local.outcome.applied) throw local.thrown;
        return { $metadata: {}, ...(local.outcome.attributes ? { Attributes: local.outcome.attributes } : {}) };
      },
    }) as unknown as DynamoDBClient;

  const itemsAlike = async (key: { pk: string; sk: string }) => {
    const { Item } = await engines.dynamodb.send(new GetItemCommand({ TableName: TABLES.tenancy, Key: keyOf(key), ConsistentRead: true }));
    expect(model.get(TABLES.tenancy, keyOf(key))).toEqual(Item);
    return Item;
  };

  beforeEach(() => {
    clock = new VirtualClock(0);
    model = new DynamoModel(clock, { random: seededRandom(38), roundTripMs: 0 });
    compared = [];
    afterQuery = undefined;
  });

  afterEach(() => {
    for (const { command, local, model: modelled } of compared) expect({ command, outcome: modelled }).toEqual({ command, outcome: local });
  });

  const organization = (orgId: string, overrides: Partial<Organization> = {}): Organization => ({
    orgId,
    plan: 'team',
    overrides: { minute: 5, hour: null },
    retentionDays: 30,
    planStatus: 'active',
    billingStatus: 'ok',
    createdAt: AT,
    updatedAt: AT,
    ...overrides,
  });

  it('answers putOrganization and putPlan alike: created, refused as existing, replaced, refused as missing', async () => {
    const store = new DynamoDbTenancyStore(differential(), TABLES.tenancy);
    await store.putOrganization(organization('o1'), { createOnly: true });
    await expect(store.putOrganization(organization('o1', { plan: 'other' }), { createOnly: true })).rejects.toThrow('already exists');
    await store.putOrganization(organization('o1', { retentionDays: null, updatedAt: LATER }), { createOnly: false });
    await itemsAlike(tenancyKeys.organization('o1'));

    await expect(store.putPlan({ name: 'p1', quotas: { minute: 1, hour: null, day: 0, month: 9 }, createdAt: AT, updatedAt: AT }, 'update')).rejects.toThrow('does not exist');
    await store.putPlan({ name: 'p1', quotas: { minute: 1, hour: null, day: 0, month: 9 }, retentionDays: 7, createdAt: AT, updatedAt: AT }, 'create');
    await expect(store.putPlan({ name: 'p1', quotas: { minute: 2, hour: 2, day: 2, month: 2 }, createdAt: AT, updatedAt: LATER }, 'create')).rejects.toThrow('already exists');
    await store.putPlan({ name: 'p1', quotas: { minute: 3, hour: null, day: null, month: null }, createdAt: AT, updatedAt: LATER }, 'update');
    await itemsAlike(tenancyKeys.plan('p1'));
    expect(compared.map((c) => c.local.applied)).toEqual([true, false, true, false, true, false, true]);
  });

  it('answers the legacy migration alike: applied once to a legacy item, refused after, and never creating an item', async () => {
    const store = new DynamoDbTenancyStore(differential(), TABLES.tenancy);
    const legacy = organization('legacy', { overrides: { minute: 1, hour: 2, day: 3, month: 4 } });
    await expect(store.migrateLegacyOrganization(organization('gone'))).resolves.toBe(false);
    await itemsAlike(tenancyKeys.organization('gone'));
    await differential().send(
      new PutItemCommand({
        TableName: TABLES.tenancy,
        Item: { ...keyOf(tenancyKeys.organization('legacy')), org_id: { S: 'legacy' }, plan: { S: 'team' }, quota_minute: { N: '1' }, quota_hour: { N: '2' }, quota_day: { N: '3' }, quota_month: { N: '4' } },
      }),
    );
    await expect(store.migrateLegacyOrganization(legacy)).resolves.toBe(true);
    await expect(store.migrateLegacyOrganization(legacy)).resolves.toBe(false);
    const migrated = await itemsAlike(tenancyKeys.organization('legacy'));
    expect(Object.keys(migrated ?? {}).sort()).toEqual(['org_id', 'overrides', 'pk', 'plan', 'sk']);
  });

  it('answers workspaces, keys and revocations alike, ALL_NEW attributes included', async () => {
    const store = new DynamoDbTenancyStore(differential(), TABLES.tenancy);
    await store.putWorkspace({ orgId: 'o2', slug: 'prod', createdAt: AT });
    await expect(store.putWorkspace({ orgId: 'o2', slug: 'prod', createdAt: LATER })).rejects.toThrow('already exists');
    await itemsAlike(tenancyKeys.workspace('o2', 'prod'));
    const key = { keyId: 'key_diff', orgId: 'o2', workspaceSlug: 'prod', status: 'active' as const, name: 'ci', displayPrefix: 'tik_abc', createdAt: AT };
    await store.putApiKey(key, 'hash-diff');
    await expect(store.putApiKey({ ...key, keyId: 'key_other' }, 'hash-diff')).rejects.toThrow();
    await expect(store.revokeApiKey('key_diff', AT)).resolves.toMatchObject({ status: 'revoked', revokedAt: AT });
    await expect(store.revokeApiKey('key_diff', LATER)).resolves.toMatchObject({ status: 'revoked', revokedAt: AT });
    await itemsAlike(tenancyKeys.apiKey('hash-diff'));
    expect(compared.filter((c) => c.command.startsWith('UpdateItemCommand')).map((c) => c.local)).toEqual([
      expect.objectContaining({ applied: true, attributes: expect.objectContaining({ revoked_at: { S: AT } }) }),
      expect.objectContaining({ applied: true, attributes: expect.objectContaining({ revoked_at: { S: AT } }) }),
    ]);
  });

  it('answers a revocation of a key deleted between its lookup and the write alike: refused, nothing created', async () => {
    const store = new DynamoDbTenancyStore(differential(), TABLES.tenancy);
    await store.putApiKey({ keyId: 'key_raced', orgId: 'o3', workspaceSlug: null, status: 'active', name: '', displayPrefix: 'tik_r', createdAt: AT }, 'hash-raced');
    afterQuery = async () => {
      afterQuery = undefined;
      await differential().send(new DeleteItemCommand({ TableName: TABLES.tenancy, Key: keyOf(tenancyKeys.apiKey('hash-raced')) }));
    };
    await expect(store.revokeApiKey('key_raced', AT)).rejects.toBeInstanceOf(ConditionalCheckFailedException);
    expect(await itemsAlike(tenancyKeys.apiKey('hash-raced'))).toBeUndefined();
  });

  /**
   * The sparse index the retention sweep reads: an item is in it only while it carries both `plan` and `org_id`
   * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-indexes-general-sparse-indexes.html). Of what
   * the store writes that is the organization alone; an organization item edited to lose `plan` leaves it, and the
   * sweep cannot see it (ingest refuses it: `plan` absent is a setting the CLI would refuse, tenancy-items.ts).
   */
  it('holds only organization items in orgs-by-plan, and loses one edited without its plan', async () => {
    const store = new DynamoDbTenancyStore(engines.dynamodb, TABLES.tenancy);
    await store.putOrganization(organization('idx-a'), { createOnly: true });
    await store.putOrganization(organization('idx-b'), { createOnly: true });
    await store.putPlan({ name: 'idx-plan', quotas: { minute: 1, hour: 1, day: 1, month: 1 }, createdAt: AT, updatedAt: AT }, 'create');
    await store.putWorkspace({ orgId: 'idx-a', slug: 'prod', createdAt: AT });
    await store.putApiKey({ keyId: 'key_idx', orgId: 'idx-a', workspaceSlug: 'prod', status: 'active', name: '', displayPrefix: 'tik_i', createdAt: AT }, 'hash-idx');
    await engines.dynamodb.send(new PutItemCommand({ TableName: TABLES.tenancy, Item: { ...keyOf(tenancyKeys.erasureSecret()), secret: { B: new Uint8Array(32) } } }));
    const indexed = async () => {
      const { Items = [] } = await engines.dynamodb.send(new ScanCommand({ TableName: TABLES.tenancy, IndexName: ORGANIZATIONS_INDEX }));
      return Items.map((item) => `${item.pk?.S}|${item.sk?.S}`).sort();
    };
    const before = await indexed();
    // Every entry, the other tests' organizations included: no plan, workspace, key or secret is among them.
    expect(before.filter((id) => !/^ORG#[^|]+\|ORG$/.test(id))).toEqual([]);
    expect(before).toEqual(expect.arrayContaining(['ORG#idx-a|ORG', 'ORG#idx-b|ORG']));
    await engines.dynamodb.send(new UpdateItemCommand({ TableName: TABLES.tenancy, Key: keyOf(tenancyKeys.organization('idx-b')), UpdateExpression: 'REMOVE #plan', ExpressionAttributeNames: { '#plan': 'plan' } }));
    expect(await indexed()).toEqual(before.filter((id) => id !== 'ORG#idx-b|ORG'));
  });
});
