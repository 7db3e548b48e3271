import type { ApiKey, Organization } from '../../shared/domain/tenancy.js';
import { NoActivePlanError, PaymentRequiredError } from '../errors.js';
import type { TenancyReader } from '../ports.js';

/** Checks 2 and 3: the key's organization has an active plan and no billing issue. */
export async function authorizeOrganization(tenancy: TenancyReader, key: ApiKey): Promise<Organization> {
  const org = await tenancy.getOrganization(key.orgId);
  if (!org || org.planStatus !== 'active') {
    throw new NoActivePlanError('Organization has no active plan: activate a plan to ingest traces');
  }
  if (org.billingStatus !== 'ok') {
    throw new PaymentRequiredError('Payment required: the organization has a billing issue; settle it to resume ingest');
  }
  return org;
}
