import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { composeIngest } from '../../lambda/ingest/compose.js';
import type { TenancyReader } from '../../lambda/ingest/core/tenancy/ports.js';
import { type ApiKey, generateApiKeySecret, type Organization, overridesOf, type Quotas } from '../../lambda/shared/domain/tenancy.js';
import { quietTelemetry } from './quiet-telemetry.js';

/**
 * One active organization with an org-wide key, served from memory: for composing the real ingest
 * handler where the tenancy table is not what is measured or tested.
 */
export function fakeTenancy(orgId: string, quotas: Quotas): { apiKey: string; tenancy: TenancyReader } {
  const secret = generateApiKeySecret();
  const key: ApiKey = { keyId: secret.keyId, orgId, workspaceSlug: null, status: 'active', name: 'fake', displayPrefix: '', createdAt: '' };
  const org: Organization = { orgId, plan: 'fake', planStatus: 'active', billingStatus: 'ok', overrides: overridesOf(quotas), createdAt: '', updatedAt: '' };
  return {
    apiKey: secret.secret,
    tenancy: { getApiKeyByHash: async () => key, getOrganization: async () => org, getPlan: async () => undefined, workspaceExists: async () => true },
  };
}

/** What {@link rateWindowsOnlyIngest} runs on. */
export interface RateWindowsOnlyOptions {
  dynamodb: DynamoDBClient;
  rateTable: string;
  tenancy: TenancyReader;
  rateLeases: boolean;
  serviceName: string;
}

/**
 * The real ingest handler with only its rate windows real (the adapters the deployed handler
 * composes, on `dynamodb`): tenancy from {@link fakeTenancy}, and a stream and overflow bucket that
 * take everything. For measuring and testing the rate path under contention.
 */
export function rateWindowsOnlyIngest({ dynamodb, rateTable, tenancy, rateLeases, serviceName }: RateWindowsOnlyOptions) {
  return composeIngest({
    resources: { rateTable },
    clients: { dynamodb },
    ports: { tenancy, sink: { publish: async () => undefined }, overflow: { put: async (key: string) => ({ bucket: 'b', key }), delete: async () => undefined } },
    idempotency: false,
    rateLeases,
    ...quietTelemetry(serviceName),
  });
}
