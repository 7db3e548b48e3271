import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { ApiKey, BillingStatus, Organization, Plan, PlanStatus, QuotaOverrides, Quotas } from '../shared/domain/tenancy.js';
import { RATE_WINDOWS } from '../shared/domain/tenancy.js';
import { isRetentionDays } from '../shared/domain/retention.js';

/** One item of the tenancy table (`lib/` defines the table, `lambda/shared/tables.ts` its keys). */
export type Item = Record<string, AttributeValue>;

export const s = (value: string): AttributeValue => ({ S: value });
export const str = (item: Item, name: string): string | undefined => item[name]?.S;
export const quotaAttribute = (window: string) => `quota_${window}`;
export const OVERRIDES = 'overrides';
/** A plan's or organization's retention in days; on an organization NULL overrides the plan with "keep", absent follows it. */
export const RETENTION_DAYS = 'retention_days';

export function keyOf(key: { pk: string; sk: string }): Item {
  return { pk: s(key.pk), sk: s(key.sk) };
}

/** How much of an invalid stored attribute is quoted: enough to recognise it, where a 400 KB item would flood a log. */
const MAX_QUOTED_CHARACTERS = 80;

/**
 * `text` cut to {@link MAX_QUOTED_CHARACTERS}, with an ellipsis and its whole length when cut. The invalid retention
 * is logged at every hourly sweep and printed by the admin CLI; a string or binary attribute (which JSON renders byte
 * by byte, `{"0":…}`) may be as large as the item.
 */
function quotedCut(text: string): string {
  if (text.length <= MAX_QUOTED_CHARACTERS) return text;
  return `${text.slice(0, MAX_QUOTED_CHARACTERS)}… (${text.length} characters)`;
}

/**
 * A stored retention, checked with the admin CLI's rule: days, `null` (NULL: kept) or absent; anything else the CLI
 * would never write (0, a negative or fractional number, more than the maximum, a string) comes back as `invalid`,
 * the attribute as stored (cut), and never as days, so that nothing acts on it. A number attribute may hold 38 digits
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.NamingRulesDataTypes.html, "Number"),
 * beyond a safe integer: `isRetentionDays` refuses those too.
 */
function retentionOf(item: Item): { days?: number | null; invalid?: string } {
  const value = item[RETENTION_DAYS];
  if (value === undefined) return {};
  if (value.NULL === true) return { days: null };
  if (value.N !== undefined && isRetentionDays(Number(value.N))) return { days: Number(value.N) };
  return { invalid: quotedCut(JSON.stringify(value)) };
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

export function toOrganization(item: Item): Organization {
  const retention = retentionOf(item);
  return {
    orgId: str(item, 'org_id') ?? '',
    plan: str(item, 'plan') ?? '',
    overrides: overridesOfItem(item),
    ...(retention.days === undefined ? {} : { retentionDays: retention.days }),
    ...(retention.invalid === undefined ? {} : { invalidRetention: retention.invalid }),
    planStatus: (str(item, 'plan_status') ?? 'inactive') as PlanStatus,
    billingStatus: (str(item, 'billing_status') ?? 'ok') as BillingStatus,
    createdAt: str(item, 'created_at') ?? '',
    updatedAt: str(item, 'updated_at') ?? '',
  };
}

export function toPlan(item: Item): Plan {
  const retention = retentionOf(item);
  return {
    name: str(item, 'plan_name') ?? '',
    quotas: quotasOf(item),
    // A plan's NULL keeps, as an absent one does.
    ...(typeof retention.days === 'number' ? { retentionDays: retention.days } : {}),
    ...(retention.invalid === undefined ? {} : { invalidRetention: retention.invalid }),
    createdAt: str(item, 'created_at') ?? '',
    updatedAt: str(item, 'updated_at') ?? '',
  };
}

export function toApiKey(item: Item): ApiKey {
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
