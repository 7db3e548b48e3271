import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { ApiKey, BillingStatus, InvalidStoredSetting, Organization, Plan, PlanStatus, QuotaOverrides, Quotas } from '../shared/domain/tenancy.js';
import { BILLING_STATUSES, isQuota, PLAN_NAME_PATTERN, PLAN_STATUSES, RATE_WINDOWS } from '../shared/domain/tenancy.js';
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

/**
 * What reading an item found: its first attribute the admin CLI would refuse. Each reader below reports through it
 * and hands back a stand-in that grants nothing (no quota, an inactive plan), so a caller that forgot to check
 * still acts on nothing it was not told.
 */
class SettingCheck {
  invalid: InvalidStoredSetting | undefined;

  refuse(attribute: string, value: AttributeValue | undefined): void {
    this.invalid ??= { attribute, stored: value === undefined ? 'absent' : quotedCut(JSON.stringify(value)) };
  }
}

/** A quota as the CLI writes it: a number attribute of 0 or more; `unlimited` is what an absent (or, in overrides, NULL) one means. */
function quotaOf(value: AttributeValue | undefined, attribute: string, check: SettingCheck, unlimited: 'absent' | 'NULL'): number | null {
  if (value === undefined && unlimited === 'absent') return null;
  if (value?.NULL === true && unlimited === 'NULL') return null;
  if (value?.N !== undefined && isQuota(Number(value.N))) return Number(value.N);
  check.refuse(attribute, value);
  return 0;
}

/** Four window quotas as `quota_<window>` number attributes; an absent attribute is unlimited. */
function quotasOf(item: Item, check: SettingCheck): Quotas {
  const quotas = {} as Quotas;
  for (const window of RATE_WINDOWS) quotas[window] = quotaOf(item[quotaAttribute(window)], quotaAttribute(window), check, 'absent');
  return quotas;
}

function overridesOfItem(item: Item, check: SettingCheck): QuotaOverrides {
  const stored = item[OVERRIDES];
  // Written before plans were records: the organization's own four numbers become its overrides.
  if (stored === undefined) return { ...quotasOf(item, check) };
  if (stored.M === undefined) {
    check.refuse(OVERRIDES, stored);
    return {};
  }
  const overrides: QuotaOverrides = {};
  for (const [window, value] of Object.entries(stored.M)) {
    if ((RATE_WINDOWS as readonly string[]).includes(window)) overrides[window as keyof Quotas] = quotaOf(value, `${OVERRIDES}.${window}`, check, 'NULL');
    else check.refuse(`${OVERRIDES}.${window}`, value);
  }
  return overrides;
}

/** A string attribute that must be one of `allowed`; absent is `fallback` (what items from before the attribute mean). */
function choiceOf<T extends string>(item: Item, attribute: string, allowed: readonly T[], fallback: T, refused: T, check: SettingCheck): T {
  const value = item[attribute];
  if (value === undefined) return fallback;
  if (value.S !== undefined && (allowed as readonly string[]).includes(value.S)) return value.S as T;
  check.refuse(attribute, value);
  return refused;
}

/** A plan name as the CLI writes it; the organization's `plan` or the plan's `plan_name`. */
function planNameOf(item: Item, attribute: string, check: SettingCheck): string {
  const value = item[attribute];
  if (value?.S !== undefined && PLAN_NAME_PATTERN.test(value.S)) return value.S;
  check.refuse(attribute, value);
  return value?.S ?? '';
}

const withInvalidSetting = (check: SettingCheck) => (check.invalid === undefined ? {} : { invalidSetting: check.invalid });

export function toOrganization(item: Item): Organization {
  const retention = retentionOf(item);
  const check = new SettingCheck();
  const org: Organization = {
    orgId: str(item, 'org_id') ?? '',
    plan: planNameOf(item, 'plan', check),
    overrides: overridesOfItem(item, check),
    ...(retention.days === undefined ? {} : { retentionDays: retention.days }),
    ...(retention.invalid === undefined ? {} : { invalidRetention: retention.invalid }),
    planStatus: choiceOf<PlanStatus>(item, 'plan_status', PLAN_STATUSES, 'inactive', 'inactive', check),
    billingStatus: choiceOf<BillingStatus>(item, 'billing_status', BILLING_STATUSES, 'ok', 'past_due', check),
    createdAt: str(item, 'created_at') ?? '',
    updatedAt: str(item, 'updated_at') ?? '',
  };
  return { ...org, ...withInvalidSetting(check) };
}

export function toPlan(item: Item): Plan {
  const retention = retentionOf(item);
  const check = new SettingCheck();
  const plan: Plan = {
    name: planNameOf(item, 'plan_name', check),
    quotas: quotasOf(item, check),
    // A plan's NULL keeps, as an absent one does.
    ...(typeof retention.days === 'number' ? { retentionDays: retention.days } : {}),
    ...(retention.invalid === undefined ? {} : { invalidRetention: retention.invalid }),
    createdAt: str(item, 'created_at') ?? '',
    updatedAt: str(item, 'updated_at') ?? '',
  };
  return { ...plan, ...withInvalidSetting(check) };
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
