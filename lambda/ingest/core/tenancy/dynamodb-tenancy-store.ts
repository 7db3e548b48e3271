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
import type { ApiKey, BillingStatus, Organization, Plan, PlanStatus, QuotaOverrides, Quotas, Workspace } from '../../../shared/domain/tenancy.js';
import { RATE_WINDOWS } from '../../../shared/domain/tenancy.js';
import { PLANS_PARTITION, tenancyKeys } from '../../../shared/tables.js';

type Item = Record<string, AttributeValue>;

export class TenancyConflictError extends Error {
  override name = 'TenancyConflictError';
}
export class TenancyNotFoundError extends Error {
  override name = 'TenancyNotFoundError';
}

const s = (value: string): AttributeValue => ({ S: value });
const str = (item: Item, name: string): string | undefined => item[name]?.S;
const quotaAttribute = (window: string) => `quota_${window}`;
const OVERRIDES = 'overrides';
/** A plan's or organization's retention in days; on an organization NULL overrides the plan with "keep", absent follows it. */
const RETENTION_DAYS = 'retention_days';

function retentionAttribute(days: number | null | undefined): Item {
  if (days === undefined) return {};
  return { [RETENTION_DAYS]: days === null ? { NULL: true } : { N: String(days) } };
}

function retentionOf(item: Item): number | null | undefined {
  const value = item[RETENTION_DAYS];
  if (value?.N !== undefined) return Number(value.N);
  return value?.NULL ? null : undefined;
}

/** Four window quotas as `quota_<window>` number attributes; an absent attribute is unlimited. */
function quotasOf(item: Item): Quotas {
  const quotas = {} as Quotas;
  for (const window of RATE_WINDOWS) {
    const n = item[quotaAttribute(window)]?.N;
    quotas[window] = n === undefined ? null : Number(n);
  }
  return quotas;
}

function quotaAttributes(quotas: Quotas): Item {
  const item: Item = {};
  for (const window of RATE_WINDOWS) {
    const quota = quotas[window];
    if (quota !== null) item[quotaAttribute(window)] = { N: String(quota) };
  }
  return item;
}

/** Overrides as a map of window to a number, or to NULL for "unlimited"; a window not in the map follows the plan. */
function overridesAttribute(overrides: QuotaOverrides): AttributeValue {
  const map: Item = {};
  for (const window of RATE_WINDOWS) {
    const value = overrides[window];
    if (value !== undefined) map[window] = value === null ? { NULL: true } : { N: String(value) };
  }
  return { M: map };
}

function overridesOfItem(item: Item): QuotaOverrides {
  const map = item[OVERRIDES]?.M;
  // Written before plans were records: the organization's own four numbers become its overrides.
  if (map === undefined) return { ...quotasOf(item) };
  const overrides: QuotaOverrides = {};
  for (const window of RATE_WINDOWS) {
    const value = map[window];
    if (value?.N !== undefined) overrides[window] = Number(value.N);
    else if (value?.NULL) overrides[window] = null;
  }
  return overrides;
}

function toOrganization(item: Item): Organization {
  const retentionDays = retentionOf(item);
  return {
    orgId: str(item, 'org_id') ?? '',
    plan: str(item, 'plan') ?? '',
    overrides: overridesOfItem(item),
    ...(retentionDays === undefined ? {} : { retentionDays }),
    planStatus: (str(item, 'plan_status') ?? 'inactive') as PlanStatus,
    billingStatus: (str(item, 'billing_status') ?? 'ok') as BillingStatus,
    createdAt: str(item, 'created_at') ?? '',
    updatedAt: str(item, 'updated_at') ?? '',
  };
}

function toPlan(item: Item): Plan {
  const retentionDays = retentionOf(item);
  return {
    name: str(item, 'plan_name') ?? '',
    quotas: quotasOf(item),
    ...(typeof retentionDays === 'number' ? { retentionDays } : {}),
    createdAt: str(item, 'created_at') ?? '',
    updatedAt: str(item, 'updated_at') ?? '',
  };
}

function organizationItem(org: Organization): Item {
  return {
    ...keyOf(tenancyKeys.organization(org.orgId)),
    org_id: s(org.orgId),
    plan: s(org.plan),
    [OVERRIDES]: overridesAttribute(org.overrides),
    ...retentionAttribute(org.retentionDays),
    plan_status: s(org.planStatus),
    billing_status: s(org.billingStatus),
    created_at: s(org.createdAt),
    updated_at: s(org.updatedAt),
  };
}

function toApiKey(item: Item): ApiKey {
  const key: ApiKey = {
    keyId: str(item, 'key_id') ?? '',
    orgId: str(item, 'org_id') ?? '',
    workspaceSlug: str(item, 'workspace_slug') ?? null,
    status: str(item, 'status') === 'active' ? 'active' : 'revoked',
    name: str(item, 'name') ?? '',
    displayPrefix: str(item, 'display_prefix') ?? '',
    createdAt: str(item, 'created_at') ?? '',
  };
  const revokedAt = str(item, 'revoked_at');
  if (revokedAt !== undefined) key.revokedAt = revokedAt;
  return key;
}

function keyOf(key: { pk: string; sk: string }): Item {
  return { pk: s(key.pk), sk: s(key.sk) };
}

/** Reads and writes plans, organizations, workspaces and API keys in the tenancy table. */
export class DynamoDbTenancyStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
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

  /** Creates or replaces every field of an organization; `createOnly` refuses an existing id. */
  async putOrganization(org: Organization, options: { createOnly: boolean }): Promise<void> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: organizationItem(org),
          ...(options.createOnly ? { ConditionExpression: 'attribute_not_exists(pk)' } : {}),
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        throw new TenancyConflictError(`organization ${org.orgId} already exists`, { cause: error });
      }
      throw error;
    }
  }

  async getPlan(name: string): Promise<Plan | undefined> {
    const { Item } = await this.client.send(
      new GetItemCommand({ TableName: this.tableName, Key: keyOf(tenancyKeys.plan(name)), ConsistentRead: true }),
    );
    return Item ? toPlan(Item) : undefined;
  }

  /** Writes a plan: `create` refuses an existing name, `update` a missing one, so neither is done by accident. */
  async putPlan(plan: Plan, mode: 'create' | 'update'): Promise<void> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: {
            ...keyOf(tenancyKeys.plan(plan.name)),
            plan_name: s(plan.name),
            ...quotaAttributes(plan.quotas),
            ...retentionAttribute(plan.retentionDays),
            created_at: s(plan.createdAt),
            updated_at: s(plan.updatedAt),
          },
          ConditionExpression: mode === 'create' ? 'attribute_not_exists(pk)' : 'attribute_exists(pk)',
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      if (mode === 'create') throw new TenancyConflictError(`plan ${plan.name} already exists`, { cause: error });
      throw new TenancyNotFoundError(`plan ${plan.name} does not exist`, { cause: error });
    }
  }

  async listPlans(): Promise<Plan[]> {
    const items = await this.queryAll({
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :plan)',
      ExpressionAttributeValues: { ':pk': s(PLANS_PARTITION), ':plan': s('PLAN#') },
      ConsistentRead: true,
    });
    return items.map(toPlan);
  }

  /** Every organization (a scan: the retention sweep and admin commands, never the ingest path). */
  async listOrganizations(): Promise<Organization[]> {
    return (await this.scanOrganizations()).map(toOrganization);
  }

  /** Every organization whose item predates plans as records (a scan: an admin command, never the ingest path). */
  async listLegacyOrganizations(): Promise<Organization[]> {
    return (await this.scanOrganizations({ expression: 'attribute_not_exists(#overrides)', names: { '#overrides': OVERRIDES } })).map(toOrganization);
  }

  /**
   * Rewrites an organization that predates plans: its four numbers become its overrides and the
   * old attributes go. Applies only while the item is still legacy, so a concurrent `org update`
   * (which writes the new form) is never overwritten and a repeated run changes nothing.
   * Returns false when the item was no longer legacy.
   */
  async migrateLegacyOrganization(org: Organization): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(tenancyKeys.organization(org.orgId)),
          UpdateExpression: `SET #overrides = :overrides REMOVE ${RATE_WINDOWS.map(quotaAttribute).join(', ')}`,
          ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#overrides)',
          ExpressionAttributeNames: { '#overrides': OVERRIDES },
          ExpressionAttributeValues: { ':overrides': overridesAttribute(org.overrides) },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async putWorkspace(workspace: Workspace): Promise<void> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: {
            ...keyOf(tenancyKeys.workspace(workspace.orgId, workspace.slug)),
            org_id: s(workspace.orgId),
            slug: s(workspace.slug),
            created_at: s(workspace.createdAt),
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        throw new TenancyConflictError(`workspace ${workspace.slug} already exists in ${workspace.orgId}`, { cause: error });
      }
      throw error;
    }
  }

  async listWorkspaces(orgId: string): Promise<Workspace[]> {
    const items = await this.queryAll({
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :ws)',
      ExpressionAttributeValues: { ':pk': s(tenancyKeys.organization(orgId).pk), ':ws': s('WS#') },
    });
    return items.map((item) => ({ orgId, slug: str(item, 'slug') ?? '', createdAt: str(item, 'created_at') ?? '' }));
  }

  async putApiKey(key: ApiKey, secretHash: string): Promise<void> {
    const item: Item = {
      ...keyOf(tenancyKeys.apiKey(secretHash)),
      key_id: s(key.keyId),
      key_org: s(key.orgId),
      org_id: s(key.orgId),
      status: s(key.status),
      name: s(key.name),
      display_prefix: s(key.displayPrefix),
      created_at: s(key.createdAt),
    };
    if (key.workspaceSlug !== null) item.workspace_slug = s(key.workspaceSlug);
    await this.client.send(
      new PutItemCommand({ TableName: this.tableName, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }),
    );
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

  /** Marks a key revoked; returns it as it now stands. */
  async revokeApiKey(keyId: string, revokedAt: string): Promise<ApiKey> {
    const [found] = await this.queryAll({
      TableName: this.tableName,
      IndexName: 'keys-by-id',
      KeyConditionExpression: 'key_id = :id',
      ExpressionAttributeValues: { ':id': s(keyId) },
    });
    if (!found?.pk || !found.sk) throw new TenancyNotFoundError(`no API key with id ${keyId}`);
    const { Attributes } = await this.client.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: { pk: found.pk, sk: found.sk },
        UpdateExpression: 'SET #status = :revoked, revoked_at = if_not_exists(revoked_at, :at)',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':revoked': s('revoked'), ':at': s(revokedAt) },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return toApiKey(Attributes ?? found);
  }

  private async scanOrganizations(filter?: { expression: string; names: Record<string, string> }): Promise<Item[]> {
    const items: Item[] = [];
    let startKey: Item | undefined;
    do {
      const page = await this.client.send(
        new ScanCommand({
          TableName: this.tableName,
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

  private async queryAll(input: ConstructorParameters<typeof QueryCommand>[0]): Promise<Item[]> {
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
