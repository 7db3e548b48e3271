import { createHash, randomBytes } from 'node:crypto';

/** Tenancy: plans with quotas, organizations on a plan, their workspaces, and API keys. */

export const RATE_WINDOWS = ['minute', 'hour', 'day', 'month'] as const;
export type RateWindow = (typeof RATE_WINDOWS)[number];

/** Traces allowed per window; `null` means unlimited. */
export type Quotas = Record<RateWindow, number | null>;

export const PLAN_STATUSES = ['active', 'inactive'] as const;
export type PlanStatus = (typeof PLAN_STATUSES)[number];
export const BILLING_STATUSES = ['ok', 'past_due'] as const;
export type BillingStatus = (typeof BILLING_STATUSES)[number];

/** Whether `quota` is a window quota the admin CLI writes: a whole number of traces, 0 or more (`null`, unlimited, aside). */
export function isQuota(quota: unknown): quota is number {
  return Number.isSafeInteger(quota) && (quota as number) >= 0;
}

/**
 * A stored attribute of an organization or plan item that the admin CLI would never write (a console edit, a
 * migration): a quota that is not a whole number of 0 or more, an override that is neither a quota nor NULL, a plan
 * name outside {@link PLAN_NAME_PATTERN}, a status outside its values. Nothing acts on an item that holds one: ingest
 * answers its organization as one without an active plan, the retention sweep skips it. (`retention_days` has its
 * own, older record: `invalidRetention`, retention.ts.)
 */
export interface InvalidStoredSetting {
  attribute: string;
  /** The attribute as stored (cut), or `absent`, for the operator who fixes it. */
  stored: string;
}

/** An {@link InvalidStoredSetting} and the item it is stored on. */
export interface InvalidSetting extends InvalidStoredSetting {
  item: 'organization' | 'plan';
}

/** A plan: a name and its four window quotas. Changing a plan changes every organization on it. */
export interface Plan {
  name: string;
  quotas: Quotas;
  /** Days an organization's data is kept after its hour ends; absent: kept (see retention.ts). */
  retentionDays?: number;
  /** The stored `retention_days` when it is not a retention (see retention.ts, `invalidRetention`); `retentionDays` is then absent. */
  invalidRetention?: string;
  /** The first stored setting the admin CLI would refuse; `quotas` then hold no value of it. */
  invalidSetting?: InvalidStoredSetting;
  createdAt: string;
  updatedAt: string;
}

/**
 * Windows in which an organization departs from its plan: a window present here ignores the plan's
 * quota (`null` there means unlimited); an absent window follows the plan.
 */
export type QuotaOverrides = Partial<Quotas>;

export interface Organization {
  orgId: string;
  /** The name of the plan the organization is on (a reference to a {@link Plan}). */
  plan: string;
  overrides: QuotaOverrides;
  /** Overrides the plan's retention: days, or `null` to keep; absent follows the plan (see retention.ts). */
  retentionDays?: number | null;
  /** The stored `retention_days` when it is not a retention (see retention.ts, `invalidRetention`); `retentionDays` is then absent. */
  invalidRetention?: string;
  /** The first stored setting the admin CLI would refuse; the fields read from it hold a stand-in that grants nothing. */
  invalidSetting?: InvalidStoredSetting;
  planStatus: PlanStatus;
  billingStatus: BillingStatus;
  createdAt: string;
  updatedAt: string;
}

/**
 * Why nothing may act on an organization: its item, or the item of the plan it is on, holds a setting the admin CLI
 * would refuse. The plan counts whenever it is given (the retention sweep always reads it; ingest only when the
 * organization follows it in some window).
 */
export function invalidSetting(org: Pick<Organization, 'invalidSetting'>, plan: Pick<Plan, 'invalidSetting'> | undefined): InvalidSetting | undefined {
  if (org.invalidSetting) return { item: 'organization', ...org.invalidSetting };
  if (plan?.invalidSetting) return { item: 'plan', ...plan.invalidSetting };
  return undefined;
}

/** Every window overridden: an organization on these needs no plan record to know its quotas. */
export function overridesOf(quotas: Quotas): QuotaOverrides {
  return { ...quotas };
}

/**
 * The quotas an organization runs under: each window's override where it has one, else its plan's
 * quota. `undefined` when a window follows the plan and the plan does not exist.
 */
export function effectiveQuotas(overrides: QuotaOverrides, plan: Plan | undefined): Quotas | undefined {
  const quotas = {} as Quotas;
  for (const window of RATE_WINDOWS) {
    const override = overrides[window];
    if (override !== undefined) quotas[window] = override;
    else if (plan) quotas[window] = plan.quotas[window];
    else return undefined;
  }
  return quotas;
}

export interface Workspace {
  orgId: string;
  slug: string;
  createdAt: string;
}

export type ApiKeyStatus = 'active' | 'revoked';

export interface ApiKey {
  keyId: string;
  orgId: string;
  /** Set for a workspace-scoped key; `null` for an organization key. */
  workspaceSlug: string | null;
  status: ApiKeyStatus;
  name: string;
  /** The first characters of the secret, safe to display. */
  displayPrefix: string;
  createdAt: string;
  revokedAt?: string;
}

/** Secrets are `tik_` followed by 43 base64url characters (256 random bits). */
export const API_KEY_PATTERN = /^tik_[A-Za-z0-9_-]{43}$/;
const DISPLAY_PREFIX_LENGTH = 12;

export function isWellFormedApiKey(value: string): boolean {
  return API_KEY_PATTERN.test(value);
}

/** SHA-256 of the secret, hex: the only form in which a key is stored. */
export function hashApiKey(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export interface NewApiKeySecret {
  secret: string;
  secretHash: string;
  keyId: string;
  displayPrefix: string;
}

export function generateApiKeySecret(): NewApiKeySecret {
  const secret = `tik_${randomBytes(32).toString('base64url')}`;
  return {
    secret,
    secretHash: hashApiKey(secret),
    keyId: `key_${randomBytes(10).toString('hex')}`,
    displayPrefix: secret.slice(0, DISPLAY_PREFIX_LENGTH),
  };
}

/** Workspace slugs: lower-case letters, digits and dashes, 1–64 characters. */
export const WORKSPACE_SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/;
/** Organization ids: letters, digits, `_` and `-`, 1–64 characters. */
export const ORG_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** Plan names: letters, digits, `_` and `-`, 1–64 characters. */
export const PLAN_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** The plan `org create` puts an organization on when told no other; created with these quotas if missing. */
export const DEFAULT_PLAN_NAME = 'default';

/**
 * Ids that partition readers turn into SQL NULL when they stand in a path (`org_id=<id>/`), compared in lower
 * case: DuckDB reads `NULL` in any case and `__HIVE_DEFAULT_PARTITION__` as NULL, and Hive, Spark and
 * Athena (Trino) read `__HIVE_DEFAULT_PARTITION__` so. No other id of ORG_ID_PATTERN is read as anything but
 * its text when the column is typed as a string, as our readers type it.
 */
export const PARTITION_NULL_ORG_IDS: readonly string[] = ['null', '__hive_default_partition__'];

/** Why an id must not be given to a new organization, or undefined when it may be. */
export function newOrgIdProblem(orgId: string): string | undefined {
  if (!ORG_ID_PATTERN.test(orgId)) return `invalid organization id '${orgId}': use 1-64 letters, digits, '_' or '-'`;
  if (PARTITION_NULL_ORG_IDS.includes(orgId.toLowerCase())) {
    return `organization id '${orgId}' is reserved: DuckDB, Hive and Athena read it in a partition path (org_id=${orgId}/) as SQL NULL, so its data could not be told apart; choose another id`;
  }
  return undefined;
}

export const DEFAULT_QUOTAS: Quotas = { minute: 1_000, hour: 20_000, day: 200_000, month: 2_000_000 };
