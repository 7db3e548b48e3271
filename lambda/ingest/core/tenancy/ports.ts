import type { ApiKey, Organization, Plan } from '../../../shared/domain/tenancy.js';

/** The tenancy lookups the ingest path makes. */
export interface TenancyReader {
  getApiKeyByHash(secretHash: string): Promise<ApiKey | undefined>;
  getOrganization(orgId: string): Promise<Organization | undefined>;
  getPlan(name: string): Promise<Plan | undefined>;
  workspaceExists(orgId: string, slug: string): Promise<boolean>;
}
