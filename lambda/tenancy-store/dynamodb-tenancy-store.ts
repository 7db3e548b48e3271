import {
  type AttributeValue,
  ConditionalCheckFailedException,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { ApiKey, Organization, Plan, QuotaOverrides, Quotas, Workspace } from '../shared/domain/tenancy.js';
import { RATE_WINDOWS } from '../shared/domain/tenancy.js';
import { tenancyKeys } from '../shared/tables.js';
import { DynamoDbTenancyListing } from './dynamodb-tenancy-listing.js';
import { type Item, keyOf, OVERRIDES, quotaAttribute, RETENTION_DAYS, s, toApiKey } from './tenancy-items.js';

export class TenancyConflictError extends Error {
  override name = 'TenancyConflictError';
}
export class TenancyNotFoundError extends Error {
  override name = 'TenancyNotFoundError';
}

function retentionAttribute(days: number | null | undefined): Item {
  if (days === undefined) return {};
  return { [RETENTION_DAYS]: days === null ? { NULL: true } : { N: String(days) } };
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

/**
 * Writes plans, organizations, workspaces and API keys in the tenancy table: the admin commands' store. Only they
 * import it: the ingest function reads through `DynamoDbTenancyReader`, the retention sweep lists through
 * `DynamoDbTenancyListing`, so neither bundles these writes.
 */
export class DynamoDbTenancyStore extends DynamoDbTenancyListing {
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
}
