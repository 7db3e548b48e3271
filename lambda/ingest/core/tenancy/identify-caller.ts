import {
  type ApiKey,
  effectiveQuotas,
  hashApiKey,
  invalidSetting,
  isWellFormedApiKey,
  type Organization,
  type Plan,
  type Quotas,
} from '../../../shared/domain/tenancy.js';
import { InvalidApiKeyError, NoActivePlanError, PaymentRequiredError } from '../errors.js';
import type { Caller } from '../ingest-types.js';
import type { IngestDeps } from '../ports.js';
import type { TenancyReader } from './ports.js';

/** Counted once per request refused for a stored tenancy setting the admin CLI would refuse (see {@link authorizeOrganization}). */
export const INVALID_TENANCY_SETTING_METRIC = 'RequestsWithInvalidTenancySetting';

/** Checks 1 to 3: the request's API key is active and its organization may ingest. */
export async function identifyCaller(deps: Pick<IngestDeps, 'tenancy' | 'logger' | 'metrics'>, apiKeyValues: readonly string[]): Promise<Caller> {
  const key = await authenticate(deps.tenancy, apiKeyValues);
  return { key, ...(await authorizeOrganization(deps, key)) };
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
 * active plan. Neither is one whose stored settings (the organization's, or the plan's when it is read) hold a value
 * the admin CLI would refuse: nothing acts on those, so the request is refused, logged and counted for the operator,
 * and the caller is told only that it has no active plan.
 */
export async function authorizeOrganization(deps: Pick<IngestDeps, 'tenancy' | 'logger' | 'metrics'>, key: ApiKey): Promise<{ org: Organization; quotas: Quotas }> {
  const org = await deps.tenancy.getOrganization(key.orgId);
  if (org) refuseInvalidSetting(deps, org, undefined);
  if (!org || org.planStatus !== 'active') {
    throw new NoActivePlanError('Organization has no active plan: activate a plan to ingest traces');
  }
  let quotas = effectiveQuotas(org.overrides, undefined);
  if (!quotas) {
    const plan = await deps.tenancy.getPlan(org.plan);
    if (plan) refuseInvalidSetting(deps, org, plan);
    quotas = effectiveQuotas(org.overrides, plan);
  }
  if (!quotas) {
    throw new NoActivePlanError(`Organization has no active plan: its plan '${org.plan}' does not exist; put the organization on an existing plan`);
  }
  if (org.billingStatus !== 'ok') {
    throw new PaymentRequiredError('Payment required: the organization has a billing issue; settle it to resume ingest');
  }
  return { org, quotas };
}

function refuseInvalidSetting(deps: Pick<IngestDeps, 'logger' | 'metrics'>, org: Organization, plan: Plan | undefined): void {
  const invalid = invalidSetting(org, plan);
  if (!invalid) return;
  deps.logger.error('Tenancy: a stored setting the admin CLI would refuse; the organization is answered 403 no_active_plan until it is fixed', {
    org_id: org.orgId,
    plan: org.plan,
    ...invalid,
  });
  deps.metrics?.count(INVALID_TENANCY_SETTING_METRIC, 1);
  throw new NoActivePlanError('Organization has no active plan: its stored plan settings cannot be used until the operator fixes them');
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
