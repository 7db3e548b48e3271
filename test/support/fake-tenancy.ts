import type { TenancyReader } from '../../lambda/ingest/ports.js';
import { type ApiKey, generateApiKeySecret, type Organization, type Quotas } from '../../lambda/shared/domain/tenancy.js';

/**
 * One active organization with an org-wide key, served from memory: for composing the real ingest
 * handler where the tenancy table is not what is measured or tested.
 */
export function fakeTenancy(orgId: string, quotas: Quotas): { apiKey: string; tenancy: TenancyReader } {
  const secret = generateApiKeySecret();
  const key: ApiKey = { keyId: secret.keyId, orgId, workspaceSlug: null, status: 'active', name: 'fake', displayPrefix: '', createdAt: '' };
  const org: Organization = { orgId, plan: 'fake', planStatus: 'active', billingStatus: 'ok', quotas, createdAt: '', updatedAt: '' };
  return {
    apiKey: secret.secret,
    tenancy: { getApiKeyByHash: async () => key, getOrganization: async () => org, workspaceExists: async () => true },
  };
}
