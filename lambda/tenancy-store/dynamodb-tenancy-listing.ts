import { QueryCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { ApiKey, Organization, Plan, Workspace } from '../shared/domain/tenancy.js';
import { ORGANIZATIONS_INDEX, PLANS_PARTITION, tenancyKeys } from '../shared/tables.js';
import { DynamoDbTenancyReader } from './dynamodb-tenancy-reader.js';
import { type Item, OVERRIDES, s, str, toApiKey, toOrganization, toPlan } from './tenancy-items.js';

/**
 * The point reads and the listings of the tenancy table (scans and queries): what the retention sweep and the admin
 * commands read. The writes are `DynamoDbTenancyStore`'s.
 */
export class DynamoDbTenancyListing extends DynamoDbTenancyReader {
  async listPlans(): Promise<Plan[]> {
    const items = await this.queryAll({
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :plan)',
      ExpressionAttributeValues: { ':pk': s(PLANS_PARTITION), ':plan': s('PLAN#') },
      ConsistentRead: true,
    });
    return items.map(toPlan);
  }

  /** Every organization (a scan of their index: the retention sweep and admin commands, never the ingest path). */
  async listOrganizations(): Promise<Organization[]> {
    return (await this.scanOrganizations()).map(toOrganization);
  }

  /** Every organization whose item predates plans as records (a scan of their index: an admin command, never the ingest path). */
  async listLegacyOrganizations(): Promise<Organization[]> {
    return (await this.scanOrganizations({ expression: 'attribute_not_exists(#overrides)', names: { '#overrides': OVERRIDES } })).map(toOrganization);
  }

  async listWorkspaces(orgId: string): Promise<Workspace[]> {
    const items = await this.queryAll({
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :ws)',
      ExpressionAttributeValues: { ':pk': s(tenancyKeys.organization(orgId).pk), ':ws': s('WS#') },
    });
    return items.map((item) => ({ orgId, slug: str(item, 'slug') ?? '', createdAt: str(item, 'created_at') ?? '' }));
  }

  async listApiKeys(orgId: string): Promise<ApiKey[]> {
    const items = await this.queryAll({
      TableName: this.tableName,
      IndexName: 'keys-by-org',
      KeyConditionExpression: 'key_org = :org',
      ExpressionAttributeValues: { ':org': s(orgId) },
    });
    return items.map(toApiKey);
  }

  private async scanOrganizations(filter?: { expression: string; names: Record<string, string> }): Promise<Item[]> {
    const items: Item[] = [];
    let startKey: Item | undefined;
    do {
      const page = await this.client.send(
        new ScanCommand({
          TableName: this.tableName,
          // The index, never the table: the sweeper's role may scan nothing else (lib/constructs/retention.ts).
          IndexName: ORGANIZATIONS_INDEX,
          FilterExpression: `sk = :org${filter ? ` AND ${filter.expression}` : ''}`,
          ...(filter ? { ExpressionAttributeNames: filter.names } : {}),
          ExpressionAttributeValues: { ':org': s('ORG') },
          ExclusiveStartKey: startKey,
        }),
      );
      items.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return items;
  }

  protected async queryAll(input: ConstructorParameters<typeof QueryCommand>[0]): Promise<Item[]> {
    const items: Item[] = [];
    let startKey: Item | undefined;
    do {
      const page = await this.client.send(new QueryCommand({ ...input, ExclusiveStartKey: startKey }));
      items.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return items;
  }
}
