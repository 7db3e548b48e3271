/**
 * The DynamoDB tables of the service, defined once. The CDK stack and the local stack both build
 * their tables from these definitions, and the adapters build their keys with the helpers below,
 * so the schema has a single source.
 */

export interface AttributeDefinition {
  name: string;
  type: 'S' | 'N';
}

export interface GlobalIndexDefinition {
  indexName: string;
  partitionKey: AttributeDefinition;
  sortKey?: AttributeDefinition;
}

export interface TableDefinition {
  /** Logical id in CDK and the suffix of the local table name. */
  logicalName: string;
  partitionKey: AttributeDefinition;
  sortKey: AttributeDefinition;
  /** Attribute holding an epoch-seconds expiry, when the table uses TTL. */
  timeToLiveAttribute?: string;
  globalIndexes: GlobalIndexDefinition[];
}

/**
 * Every organization and nothing else: only organization items carry both `plan` and `org_id` (a plan has
 * `plan_name`, a key or workspace no `plan`, the erasure secret neither), and an index holds only the items that
 * carry its key attributes. The retention sweep scans it, never the table, whose scan would also return every key
 * hash and the erasure secret.
 */
export const ORGANIZATIONS_INDEX = 'orgs-by-plan';

/** Plans, organizations, workspaces and API keys. */
export const TENANCY_TABLE: TableDefinition = {
  logicalName: 'Tenancy',
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  globalIndexes: [
    // Lists an organization's keys (`key list`).
    { indexName: 'keys-by-org', partitionKey: { name: 'key_org', type: 'S' }, sortKey: { name: 'key_id', type: 'S' } },
    // Finds a key by its public id (`key revoke`).
    { indexName: 'keys-by-id', partitionKey: { name: 'key_id', type: 'S' } },
    // Lists the organizations (the retention sweep, and `org migrate` for those from before plans).
    { indexName: ORGANIZATIONS_INDEX, partitionKey: { name: 'plan', type: 'S' }, sortKey: { name: 'org_id', type: 'S' } },
  ],
};

/** Rate-window counters and idempotency records; TTL only cleans up, it never resets a window. */
export const RATE_TABLE: TableDefinition = {
  logicalName: 'RateWindows',
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  timeToLiveAttribute: 'expires_at',
  globalIndexes: [],
};

export const TABLES = [TENANCY_TABLE, RATE_TABLE] as const;

export const PLANS_PARTITION = 'PLANS';

/** Item keys, one builder per item kind. */
export const tenancyKeys = {
  organization: (orgId: string) => ({ pk: `ORG#${orgId}`, sk: 'ORG' }),
  /** All plans share one partition, so `plan list` is one query; ingest reads them through a cache. */
  plan: (name: string) => ({ pk: PLANS_PARTITION, sk: `PLAN#${name}` }),
  workspace: (orgId: string, slug: string) => ({ pk: `ORG#${orgId}`, sk: `WS#${slug}` }),
  apiKey: (secretHash: string) => ({ pk: `KEY#${secretHash}`, sk: 'KEY' }),
  /** The per-stack secret that keys the hashes erasure keeps (lambda/erasure/). */
  erasureSecret: () => ({ pk: 'SECRETS', sk: 'ERASURE_HMAC' }),
};

export const rateKeys = {
  window: (orgId: string, window: string, windowStart: string) => ({ pk: `RATE#${orgId}`, sk: `${window}#${windowStart}` }),
  /** Marks that a request's reservation was applied, so giving it back is exact even after a lost response. */
  reservation: (orgId: string, requestId: string) => ({ pk: `RATE#${orgId}`, sk: `reservation#${requestId}` }),
  idempotency: (orgId: string, idempotencyKey: string) => ({ pk: `IDEM#${orgId}`, sk: idempotencyKey }),
};
