import { DynamoDBClient, QueryCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
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
});
