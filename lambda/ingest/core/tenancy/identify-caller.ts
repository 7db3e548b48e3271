import { type ApiKey, effectiveQuotas, hashApiKey, isWellFormedApiKey, type Organization, type Quotas } from '../../../shared/domain/tenancy.js';
import { InvalidApiKeyError, NoActivePlanError, PaymentRequiredError } from '../errors.js';
import type { Caller } from '../ingest-types.js';
import type { TenancyReader } from './ports.js';

/** Checks 1 to 3: the request's API key is active and its organization may ingest. */
export async function identifyCaller(tenancy: TenancyReader, apiKeyValues: readonly string[]): Promise<Caller> {
  const key = await authenticate(tenancy, apiKeyValues);
  return { key, ...(await authorizeOrganization(tenancy, key)) };
}

/** Check 1: the request carries exactly one active API key. */
export async function authenticate(tenancy: TenancyReader, apiKeyValues: readonly string[]): Promise<ApiKey> {
  const header = singleHeaderValue(apiKeyValues);
  if (header.kind === 'absent') throw new InvalidApiKeyError('Invalid or missing API key: send your key in the X-API-Key header');
  if (header.kind === 'conflicting') throw new InvalidApiKeyError('Invalid or missing API key: send exactly one X-API-Key header');
  const secret = header.value;
  if (!isWellFormedApiKey(secret)) throw new InvalidApiKeyError('Invalid or missing API key: the X-API-Key value is not a valid key');
  const key = await tenancy.getApiKeyByHash(hashApiKey(secret));
  if (!key || key.status !== 'active') throw new InvalidApiKeyError('Invalid or missing API key: the key is unknown or revoked');
  return key;
}

/**
 * Checks 2 and 3: the key's organization has an active plan and no billing issue. The plan is read
 * only for the windows the organization does not override; a plan that does not exist is no
 * active plan.
 */
export async function authorizeOrganization(tenancy: TenancyReader, key: ApiKey): Promise<{ org: Organization; quotas: Quotas }> {
  const org = await tenancy.getOrganization(key.orgId);
  if (!org || org.planStatus !== 'active') {
    throw new NoActivePlanError('Organization has no active plan: activate a plan to ingest traces');
  }
  const quotas = effectiveQuotas(org.overrides, undefined) ?? effectiveQuotas(org.overrides, await tenancy.getPlan(org.plan));
  if (!quotas) {
    throw new NoActivePlanError(`Organization has no active plan: its plan '${org.plan}' does not exist; put the organization on an existing plan`);
  }
  if (org.billingStatus !== 'ok') {
    throw new PaymentRequiredError('Payment required: the organization has a billing issue; settle it to resume ingest');
  }
  return { org, quotas };
}

/** The values of a header that must be sent once. Repeats of one value count as one. */
export type SingleHeaderValue = { kind: 'absent' } | { kind: 'one'; value: string } | { kind: 'conflicting' };

/** The one rule for `X-API-Key`, `Idempotency-Key` and `X-Workspace-Slug`: exactly one distinct (trimmed) value. */
export function singleHeaderValue(values: readonly string[]): SingleHeaderValue {
  const distinct = new Set(values.map((value) => value.trim()));
  const [first] = distinct;
  if (first === undefined) return { kind: 'absent' };
  return distinct.size === 1 ? { kind: 'one', value: first } : { kind: 'conflicting' };
}
