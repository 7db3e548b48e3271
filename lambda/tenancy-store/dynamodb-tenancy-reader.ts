import { type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { ApiKey, Organization, Plan } from '../shared/domain/tenancy.js';
import { tenancyKeys } from '../shared/tables.js';
import { keyOf, toApiKey, toOrganization, toPlan } from './tenancy-items.js';

/**
 * The point reads of the tenancy table, each strongly consistent: what the ingest function looks up per request
 * (its `TenancyReader`). The writes live in `DynamoDbTenancyStore`, which the ingest bundle never imports.
 */
export class DynamoDbTenancyReader {
  constructor(
    protected readonly client: DynamoDBClient,
    protected readonly tableName: string,
  ) {}

  async getApiKeyByHash(secretHash: string): Promise<ApiKey | undefined> {
    const { Item } = await this.client.send(
      new GetItemCommand({ TableName: this.tableName, Key: keyOf(tenancyKeys.apiKey(secretHash)), ConsistentRead: true }),
    );
    return Item ? toApiKey(Item) : undefined;
  }

  async getOrganization(orgId: string): Promise<Organization | undefined> {
    const { Item } = await this.client.send(
      new GetItemCommand({ TableName: this.tableName, Key: keyOf(tenancyKeys.organization(orgId)), ConsistentRead: true }),
    );
    return Item ? toOrganization(Item) : undefined;
  }

  async workspaceExists(orgId: string, slug: string): Promise<boolean> {
    const { Item } = await this.client.send(
      new GetItemCommand({
        TableName: this.tableName,
        Key: keyOf(tenancyKeys.workspace(orgId, slug)),
        ProjectionExpression: 'pk',
        ConsistentRead: true,
      }),
    );
    return Item !== undefined;
  }

  async getPlan(name: string): Promise<Plan | undefined> {
    const { Item } = await this.client.send(
      new GetItemCommand({ TableName: this.tableName, Key: keyOf(tenancyKeys.plan(name)), ConsistentRead: true }),
    );
    return Item ? toPlan(Item) : undefined;
  }
}
