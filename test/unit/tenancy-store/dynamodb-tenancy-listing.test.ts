import { DynamoDBClient, GetItemCommand, QueryCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { ORGANIZATIONS_INDEX, PLANS_PARTITION } from '../../../lambda/shared/tables.js';
import { DynamoDbTenancyListing } from '../../../lambda/tenancy-store/dynamodb-tenancy-listing.js';

const dynamodb = mockClient(DynamoDBClient);
const TABLE = 'tenancy';
const listing = () => new DynamoDbTenancyListing(new DynamoDBClient({}), TABLE);
const org = (orgId: string) => ({ pk: { S: `ORG#${orgId}` }, sk: { S: 'ORG' }, org_id: { S: orgId }, plan: { S: 'team' }, overrides: { M: {} } });

beforeEach(() => dynamodb.reset());

describe('DynamoDbTenancyListing, what the retention sweep reads (its role may send nothing else)', () => {
  it('lists the organizations by scanning their index, every page, never the table that holds key hashes and the erasure secret', async () => {
    dynamodb.on(ScanCommand).resolvesOnce({ Items: [org('a')], LastEvaluatedKey: org('a') }).resolvesOnce({ Items: [org('b')] });
    const organizations = await listing().listOrganizations();
    expect(organizations.map((o) => o.orgId)).toEqual(['a', 'b']);
    expect(dynamodb).toHaveReceivedCommandTimes(ScanCommand, 2);
    for (const call of dynamodb.commandCalls(ScanCommand)) expect(call.args[0].input).toMatchObject({ TableName: TABLE, IndexName: ORGANIZATIONS_INDEX, FilterExpression: 'sk = :org' });
    expect(dynamodb.commandCalls(ScanCommand)[1]?.args[0].input.ExclusiveStartKey).toEqual(org('a'));
  });

  it('lists the plans by querying their one partition', async () => {
    dynamodb.on(QueryCommand).resolves({ Items: [{ pk: { S: PLANS_PARTITION }, sk: { S: 'PLAN#team' }, plan_name: { S: 'team' } }] });
    await expect(listing().listPlans()).resolves.toEqual([expect.objectContaining({ name: 'team' })]);
    expect(dynamodb).toHaveReceivedCommandWith(QueryCommand, { TableName: TABLE, KeyConditionExpression: 'pk = :pk AND begins_with(sk, :plan)', ExpressionAttributeValues: { ':pk': { S: PLANS_PARTITION }, ':plan': { S: 'PLAN#' } } });
    expect(dynamodb.commandCalls(QueryCommand)[0]?.args[0].input.IndexName).toBeUndefined();
  });

  it('reads every page of organizations until no LastEvaluatedKey is left, each from where the last stopped', async () => {
    dynamodb
      .on(ScanCommand)
      .resolvesOnce({ Items: [org('a'), org('b')], LastEvaluatedKey: org('b') })
      .resolvesOnce({ Items: [], LastEvaluatedKey: { pk: { S: 'ORG#c' } } })
      .resolvesOnce({ Items: [org('c')], LastEvaluatedKey: org('c') })
      .resolvesOnce({});
    await expect(listing().listOrganizations()).resolves.toEqual(['a', 'b', 'c'].map((id) => expect.objectContaining({ orgId: id })));
    expect(dynamodb.commandCalls(ScanCommand).map((call) => call.args[0].input.ExclusiveStartKey)).toEqual([undefined, org('b'), { pk: { S: 'ORG#c' } }, org('c')]);
  });

  it('reads every page of plans, workspaces and keys', async () => {
    const plan = (name: string) => ({ pk: { S: PLANS_PARTITION }, sk: { S: `PLAN#${name}` }, plan_name: { S: name } });
    dynamodb.on(QueryCommand).resolvesOnce({ Items: [plan('a')], LastEvaluatedKey: plan('a') }).resolvesOnce({ Items: [plan('b')] });
    await expect(listing().listPlans()).resolves.toEqual([expect.objectContaining({ name: 'a' }), expect.objectContaining({ name: 'b' })]);
    expect(dynamodb.commandCalls(QueryCommand).map((call) => call.args[0].input.ExclusiveStartKey)).toEqual([undefined, plan('a')]);
    expect(dynamodb.commandCalls(QueryCommand)[1]?.args[0].input).toMatchObject({ ConsistentRead: true, KeyConditionExpression: 'pk = :pk AND begins_with(sk, :plan)' });
  });

  it('lists the organizations from before plans were records: those without overrides, on the same index', async () => {
    dynamodb.on(ScanCommand).resolves({ Items: [{ ...org('old'), overrides: undefined as never, quota_minute: { N: '3' } }] });
    await expect(listing().listLegacyOrganizations()).resolves.toEqual([expect.objectContaining({ orgId: 'old', overrides: { minute: 3, hour: null, day: null, month: null } })]);
    expect(dynamodb).toHaveReceivedCommandWith(ScanCommand, {
      TableName: TABLE,
      IndexName: ORGANIZATIONS_INDEX,
      FilterExpression: 'sk = :org AND attribute_not_exists(#overrides)',
      ExpressionAttributeNames: { '#overrides': 'overrides' },
      ExpressionAttributeValues: { ':org': { S: 'ORG' } },
    });
    dynamodb.reset();
    dynamodb.on(ScanCommand).resolves({});
    await listing().listOrganizations();
    expect(dynamodb.commandCalls(ScanCommand)[0]?.args[0].input).not.toHaveProperty('ExpressionAttributeNames');
  });

  it("lists an organization's workspaces from its partition and its keys from keys-by-org", async () => {
    dynamodb.on(QueryCommand, { KeyConditionExpression: 'pk = :pk AND begins_with(sk, :ws)' }).resolves({ Items: [{ slug: { S: 'prod' }, created_at: { S: 'then' } }, {}] });
    dynamodb.on(QueryCommand, { IndexName: 'keys-by-org' }).resolves({ Items: [{ key_id: { S: 'key_1' }, org_id: { S: 'acme' }, status: { S: 'active' } }] });
    await expect(listing().listWorkspaces('acme')).resolves.toEqual([
      { orgId: 'acme', slug: 'prod', createdAt: 'then' },
      { orgId: 'acme', slug: '', createdAt: '' },
    ]);
    expect(dynamodb).toHaveReceivedCommandWith(QueryCommand, { TableName: TABLE, ExpressionAttributeValues: { ':pk': { S: 'ORG#acme' }, ':ws': { S: 'WS#' } } });
    await expect(listing().listApiKeys('acme')).resolves.toEqual([expect.objectContaining({ keyId: 'key_1', status: 'active' })]);
    expect(dynamodb).toHaveReceivedCommandWith(QueryCommand, { TableName: TABLE, IndexName: 'keys-by-org', KeyConditionExpression: 'key_org = :org', ExpressionAttributeValues: { ':org': { S: 'acme' } } });
  });
});

describe('DynamoDbTenancyReader, what ingest reads per request: point reads, each strongly consistent', () => {
  it('reads a key by its hash, an organization, a plan and a workspace by their keys', async () => {
    dynamodb.on(GetItemCommand).resolves({ Item: { ...org('acme'), key_id: { S: 'key_1' }, status: { S: 'active' }, plan_name: { S: 'team' } } });
    const reader = listing();
    await expect(reader.getApiKeyByHash('h')).resolves.toMatchObject({ keyId: 'key_1', status: 'active' });
    await expect(reader.getOrganization('acme')).resolves.toMatchObject({ orgId: 'acme', plan: 'team' });
    await expect(reader.getPlan('team')).resolves.toMatchObject({ name: 'team' });
    await expect(reader.workspaceExists('acme', 'prod')).resolves.toBe(true);
    expect(dynamodb.commandCalls(GetItemCommand).map((call) => call.args[0].input)).toEqual([
      { TableName: TABLE, Key: { pk: { S: 'KEY#h' }, sk: { S: 'KEY' } }, ConsistentRead: true },
      { TableName: TABLE, Key: { pk: { S: 'ORG#acme' }, sk: { S: 'ORG' } }, ConsistentRead: true },
      { TableName: TABLE, Key: { pk: { S: PLANS_PARTITION }, sk: { S: 'PLAN#team' } }, ConsistentRead: true },
      { TableName: TABLE, Key: { pk: { S: 'ORG#acme' }, sk: { S: 'WS#prod' } }, ProjectionExpression: 'pk', ConsistentRead: true },
    ]);
  });

  it('answers undefined, or false for a workspace, when there is no item', async () => {
    dynamodb.on(GetItemCommand).resolves({});
    const reader = listing();
    await expect(reader.getApiKeyByHash('h')).resolves.toBeUndefined();
    await expect(reader.getOrganization('acme')).resolves.toBeUndefined();
    await expect(reader.getPlan('team')).resolves.toBeUndefined();
    await expect(reader.workspaceExists('acme', 'prod')).resolves.toBe(false);
  });
});
