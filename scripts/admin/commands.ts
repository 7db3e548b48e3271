import { TenancyNotFoundError, type DynamoDbTenancyStore } from '../../lambda/tenancy-store/dynamodb-tenancy-store.js';
import { DEFAULT_TENANCY_CACHE } from '../../lambda/ingest/core/tenancy/tenancy-cache.js';
import { type AppliedRetention, appliedRetention, type InvalidRetention, invalidRetention, isRetentionDays, MAX_RETENTION_DAYS } from '../../lambda/shared/domain/retention.js';
import {
  type ApiKey,
  type BillingStatus,
  type InvalidStoredSetting,
  DEFAULT_PLAN_NAME,
  DEFAULT_QUOTAS,
  effectiveQuotas,
  generateApiKeySecret,
  type NewApiKeySecret,
  newOrgIdProblem,
  ORG_ID_PATTERN,
  type Organization,
  type Plan,
  PLAN_NAME_PATTERN,
  type PlanStatus,
  type QuotaOverrides,
  type Quotas,
  RATE_WINDOWS,
  type RateWindow,
  type Workspace,
  WORKSPACE_SLUG_PATTERN,
} from '../../lambda/shared/domain/tenancy.js';

/** A command refused before anything was written: bad input, or a missing organization. */
export class AdminCommandError extends Error {
  override name = 'AdminCommandError';
}

/** The tenancy operations the admin commands need; `DynamoDbTenancyStore` provides them. */
export type TenancyAdminStore = Pick<
  DynamoDbTenancyStore,
  | 'getOrganization'
  | 'putOrganization'
  | 'getPlan'
  | 'putPlan'
  | 'listPlans'
  | 'listOrganizations'
  | 'listLegacyOrganizations'
  | 'migrateLegacyOrganization'
  | 'putWorkspace'
  | 'workspaceExists'
  | 'listWorkspaces'
  | 'putApiKey'
  | 'listApiKeys'
  | 'revokeApiKey'
>;

export interface AdminDeps {
  store: TenancyAdminStore;
  now: () => Date;
  newSecret?: () => NewApiKeySecret;
  /** The stack's `dataRetentionDays`, when set: the ceiling over every plan's and organization's retention. */
  retentionCeilingDays?: number;
}

/** `plan`: drop the organization's override of that window, so it follows its plan again. */
export const FOLLOW_PLAN = 'plan';

/** An override change per window: a number, `null` (unlimited), or {@link FOLLOW_PLAN}. */
export type OverrideChanges = Partial<Record<RateWindow, number | null | typeof FOLLOW_PLAN>>;

/** Organization settings an operator may set; absent members keep their value (or the default on create). */
export interface OrganizationSettings {
  plan?: string;
  planStatus?: PlanStatus;
  billingStatus?: BillingStatus;
  overrides?: OverrideChanges;
  /** Days, `null` to keep, or {@link FOLLOW_PLAN} to drop the override. */
  retentionDays?: number | null | typeof FOLLOW_PLAN;
}

/** How long a plan or organization change takes to reach every ingest container (their tenancy cache). */
export const CHANGE_DELAY_SECONDS = DEFAULT_TENANCY_CACHE.ttlMs / 1000;

/** The retention an organization runs under, and every setting it comes from. */
export interface RetentionView extends AppliedRetention {
  /** The plan's retention (`null`: kept, or no such plan). */
  plan_days: number | null;
  /** The organization's override; absent when it follows its plan (`null`: kept, whatever the plan says). */
  organization_days?: number | null;
  /** The stack's `dataRetentionDays`, the ceiling over both (`null`: not set). */
  stack_ceiling_days: number | null;
  /**
   * Present when the organization's item or its plan's holds a `retention_days` that is not a retention (a console
   * edit, a migration): the sweep deletes nothing of the organization (`days: null`) until it is fixed.
   */
  invalid?: { item: InvalidRetention['item']; stored_retention_days: string };
}

export interface OrganizationView {
  org_id: string;
  plan: string;
  plan_status: PlanStatus;
  billing_status: BillingStatus;
  /** The windows in which the organization departs from its plan (`null` is unlimited). */
  overrides: QuotaOverrides;
  /** The quotas it runs under: overrides over the plan's; `null` is unlimited. `null` as a whole: its plan does not exist. */
  quotas: Quotas | null;
  /** Days its data is kept after each hour ends (`days: null`: kept), and where that comes from. */
  retention: RetentionView;
  /** The first stored setting the CLI would refuse: ingest answers the organization 403 and the sweep skips it until it is fixed. */
  invalid_setting?: InvalidStoredSetting;
  created_at: string;
  updated_at: string;
}

export interface PlanView {
  plan: string;
  /** Traces per window; `null` is unlimited. */
  quotas: Quotas;
  /** Days the data of its organizations is kept after each hour ends; `null`: kept. */
  retention_days: number | null;
  /** The stored `retention_days` when it is not a retention: nothing of its organizations is swept until it is fixed. */
  invalid_retention_days?: string;
  /** The first stored setting the CLI would refuse: its organizations are refused and skipped until it is fixed. */
  invalid_setting?: InvalidStoredSetting;
  created_at: string;
  updated_at: string;
}

export interface WorkspaceView {
  org_id: string;
  slug: string;
  created_at: string;
}

export interface ApiKeyView {
  key_id: string;
  org_id: string;
  workspace_slug: string | null;
  scope: 'organization' | 'workspace';
  name: string;
  status: ApiKey['status'];
  display_prefix: string;
  created_at: string;
  revoked_at: string | null;
}

/** What retention applies to an organization and where it comes from. */
export function retentionView(org: Organization, plan: Plan | undefined, stackCeilingDays: number | undefined): RetentionView {
  const invalid = invalidRetention(org, plan);
  return {
    ...(invalid ? { days: null, source: invalid.item } : appliedRetention(org, plan, stackCeilingDays)),
    plan_days: plan?.retentionDays ?? null,
    ...(org.retentionDays === undefined ? {} : { organization_days: org.retentionDays }),
    stack_ceiling_days: stackCeilingDays ?? null,
    ...(invalid ? { invalid: { item: invalid.item, stored_retention_days: invalid.stored } } : {}),
  };
}

export const toOrganizationView = (org: Organization, plan: Plan | undefined, stackCeilingDays?: number): OrganizationView => ({
  org_id: org.orgId,
  plan: org.plan,
  plan_status: org.planStatus,
  billing_status: org.billingStatus,
  overrides: org.overrides,
  quotas: effectiveQuotas(org.overrides, plan) ?? null,
  retention: retentionView(org, plan, stackCeilingDays),
  ...(org.invalidSetting === undefined ? {} : { invalid_setting: org.invalidSetting }),
  created_at: org.createdAt,
  updated_at: org.updatedAt,
});

const toPlanView = (plan: Plan): PlanView => ({
  plan: plan.name,
  quotas: plan.quotas,
  retention_days: plan.retentionDays ?? null,
  ...(plan.invalidRetention === undefined ? {} : { invalid_retention_days: plan.invalidRetention }),
  ...(plan.invalidSetting === undefined ? {} : { invalid_setting: plan.invalidSetting }),
  created_at: plan.createdAt,
  updated_at: plan.updatedAt,
});

/**
 * A write replaces the whole item, so a change that does not set the retention would silently turn a stored value
 * that is not a retention (which the sweep leaves alone) into "follows the plan" or "kept": the operator decides it.
 */
function refuseKeepingInvalidRetention(what: string, stored: string | undefined, given: unknown, choices: string): void {
  if (stored !== undefined && given === undefined) {
    throw new AdminCommandError(`${what} has a stored retention_days of ${stored}, which is not a retention (the sweep deletes nothing of it until it is fixed): give --retention-days ${choices} with this change`);
  }
}

/**
 * As {@link refuseKeepingInvalidRetention} for the other settings: a stored value the CLI would refuse is read as a
 * stand-in that grants nothing (quota 0, inactive), and a whole-item write that does not set that attribute would
 * store the stand-in in its place, silently. `replaces` says whether this change sets the attribute.
 */
function refuseKeepingInvalidSetting(what: string, invalid: InvalidStoredSetting | undefined, replaces: (attribute: string) => boolean): void {
  if (invalid !== undefined && !replaces(invalid.attribute)) {
    throw new AdminCommandError(`${what} has a stored ${invalid.attribute} of ${invalid.stored}, which the CLI would refuse (ingest refuses it and the sweep skips it until it is fixed): give the option that sets ${invalid.attribute} with this change`);
  }
}

/** The window whose quota a stored attribute holds (`quota_<window>`, `overrides.<window>`), or undefined. */
const windowOfAttribute = (attribute: string) => RATE_WINDOWS.find((window) => attribute === `quota_${window}` || attribute === `overrides.${window}`);

const toWorkspaceView = (workspace: Workspace): WorkspaceView => ({
  org_id: workspace.orgId,
  slug: workspace.slug,
  created_at: workspace.createdAt,
});

export const toApiKeyView = (key: ApiKey): ApiKeyView => ({
  key_id: key.keyId,
  org_id: key.orgId,
  workspace_slug: key.workspaceSlug,
  scope: key.workspaceSlug === null ? 'organization' : 'workspace',
  name: key.name,
  status: key.status,
  display_prefix: key.displayPrefix,
  created_at: key.createdAt,
  revoked_at: key.revokedAt ?? null,
});

function checkOrgId(orgId: string): void {
  if (!ORG_ID_PATTERN.test(orgId)) {
    throw new AdminCommandError(`invalid organization id '${orgId}': use 1-64 letters, digits, '_' or '-'`);
  }
}

function checkPlanName(name: string): void {
  if (!PLAN_NAME_PATTERN.test(name)) throw new AdminCommandError(`invalid plan name '${name}': use 1-64 letters, digits, '_' or '-'`);
}

function checkQuota(window: string, quota: unknown, alsoAllowed = ''): void {
  if (quota !== null && quota !== undefined && quota !== FOLLOW_PLAN && !(Number.isSafeInteger(quota) && (quota as number) >= 0)) {
    throw new AdminCommandError(`the ${window} quota must be a whole number >= 0 or "none"${alsoAllowed}`);
  }
}

/** A retention: whole days from 1 to {@link MAX_RETENTION_DAYS}, `null` ("none": kept), or, on an organization, {@link FOLLOW_PLAN}. */
function checkRetention(days: unknown, alsoAllowed = ''): void {
  if (days !== undefined && days !== null && days !== FOLLOW_PLAN && !isRetentionDays(days)) {
    throw new AdminCommandError(`the retention must be a whole number of days from 1 to ${MAX_RETENTION_DAYS} or "none"${alsoAllowed}`);
  }
}

function checkSettings(settings: OrganizationSettings): void {
  if (settings.plan !== undefined) checkPlanName(settings.plan);
  for (const [window, quota] of Object.entries(settings.overrides ?? {})) checkQuota(window, quota, ' or "plan"');
  checkRetention(settings.retentionDays, ' or "plan"');
}

/** The organization's retention override after a change: a value, or none (follows the plan). */
function withRetention(org: Organization, change: OrganizationSettings['retentionDays']): Organization {
  if (change === undefined) return org;
  const { retentionDays: _dropped, invalidRetention: _replaced, ...rest } = org;
  return change === FOLLOW_PLAN ? rest : { ...rest, retentionDays: change };
}

function applyOverrides(current: QuotaOverrides, changes: OverrideChanges = {}): QuotaOverrides {
  const overrides = { ...current };
  for (const window of RATE_WINDOWS) {
    const change = changes[window];
    if (change === FOLLOW_PLAN) delete overrides[window];
    else if (change !== undefined) overrides[window] = change;
  }
  return overrides;
}

/** An existing organization with the quotas it runs under (`undefined`: its plan does not exist). */
export async function organizationWithQuotas(deps: AdminDeps, orgId: string): Promise<{ org: Organization; quotas: Quotas | undefined }> {
  const org = await requireOrganization(deps, orgId);
  return { org, quotas: effectiveQuotas(org.overrides, undefined) ?? effectiveQuotas(org.overrides, await deps.store.getPlan(org.plan)) };
}

export async function requireOrganization(deps: AdminDeps, orgId: string): Promise<Organization> {
  checkOrgId(orgId);
  const org = await deps.store.getOrganization(orgId);
  if (!org) throw new AdminCommandError(`organization '${orgId}' does not exist`);
  return org;
}

async function requirePlan(deps: AdminDeps, name: string): Promise<Plan> {
  checkPlanName(name);
  const plan = await deps.store.getPlan(name);
  if (!plan) throw new AdminCommandError(`plan '${name}' does not exist; create it first with: plan create --plan ${name} --per-minute N --per-hour N --per-day N --per-month N`);
  return plan;
}

/**
 * The plan a new organization goes on. The default plan is the one plan that need not be created
 * first: it is made with the default quotas the first time an organization is put on it.
 */
async function planForNewOrganization(deps: AdminDeps, name: string): Promise<Plan> {
  if (name !== DEFAULT_PLAN_NAME) return requirePlan(deps, name);
  const existing = await deps.store.getPlan(name);
  if (existing) return existing;
  const now = deps.now().toISOString();
  const plan: Plan = { name, quotas: { ...DEFAULT_QUOTAS }, createdAt: now, updatedAt: now };
  try {
    await deps.store.putPlan(plan, 'create');
    return plan;
  } catch {
    // Created meanwhile by another command: use that one.
    return requirePlan(deps, name);
  }
}

function withoutFollowPlan(changes: OverrideChanges = {}): QuotaOverrides {
  return applyOverrides({}, changes);
}

/** `org create`: an active organization on a plan (the default plan unless told otherwise); refuses an existing id. */
export async function createOrganization(deps: AdminDeps, orgId: string, settings: OrganizationSettings = {}): Promise<OrganizationView> {
  // Stricter than for an existing organization, which stays manageable whatever its id.
  const problem = newOrgIdProblem(orgId);
  if (problem !== undefined) throw new AdminCommandError(problem);
  checkSettings(settings);
  const plan = await planForNewOrganization(deps, settings.plan ?? DEFAULT_PLAN_NAME);
  const now = deps.now().toISOString();
  const org: Organization = withRetention(
    {
      orgId,
      plan: plan.name,
      overrides: withoutFollowPlan(settings.overrides),
      planStatus: settings.planStatus ?? 'active',
      billingStatus: settings.billingStatus ?? 'ok',
      createdAt: now,
      updatedAt: now,
    },
    settings.retentionDays,
  );
  await deps.store.putOrganization(org, { createOnly: true });
  return toOrganizationView(org, plan, deps.retentionCeilingDays);
}

/** `org update`: changes only the settings given; at least one must be. A new plan must exist. */
export async function updateOrganization(deps: AdminDeps, orgId: string, settings: OrganizationSettings): Promise<OrganizationView & { takes_effect_within_seconds: number }> {
  const given = [settings.plan, settings.planStatus, settings.billingStatus, settings.retentionDays, ...Object.values(settings.overrides ?? {})];
  if (given.every((value) => value === undefined)) {
    throw new AdminCommandError(
      'org update changes nothing without an option: give --plan, --plan-status, --billing, --retention-days or a quota override (--per-minute, --per-hour, --per-day, --per-month)',
    );
  }
  checkSettings(settings);
  const current = await requireOrganization(deps, orgId);
  refuseKeepingInvalidRetention(`organization '${orgId}'`, current.invalidRetention, settings.retentionDays, 'N, none or plan');
  refuseKeepingInvalidSetting(`organization '${orgId}'`, current.invalidSetting, (attribute) => {
    if (attribute === 'plan') return settings.plan !== undefined;
    if (attribute === 'plan_status') return settings.planStatus !== undefined;
    if (attribute === 'billing_status') return settings.billingStatus !== undefined;
    // A stored overrides attribute that is no map: any override given writes a new map in its place.
    if (attribute === 'overrides') return Object.values(settings.overrides ?? {}).some((value) => value !== undefined);
    const window = windowOfAttribute(attribute);
    return window !== undefined && settings.overrides?.[window] !== undefined;
  });
  const plan = settings.plan !== undefined ? await requirePlan(deps, settings.plan) : await deps.store.getPlan(current.plan);
  // The setting refused above is replaced by this change (checked), so the item written is valid again.
  const { invalidSetting: _replacedSetting, ...currentSettings } = current;
  const org: Organization = withRetention(
    {
      ...currentSettings,
      plan: settings.plan ?? current.plan,
      planStatus: settings.planStatus ?? current.planStatus,
      billingStatus: settings.billingStatus ?? current.billingStatus,
      overrides: applyOverrides(current.overrides, settings.overrides),
      updatedAt: deps.now().toISOString(),
    },
    settings.retentionDays,
  );
  await deps.store.putOrganization(org, { createOnly: false });
  return { ...toOrganizationView(org, plan, deps.retentionCeilingDays), takes_effect_within_seconds: CHANGE_DELAY_SECONDS };
}

/** `org show`: the organization, the quotas it runs under, and its workspaces. */
export async function showOrganization(deps: AdminDeps, orgId: string): Promise<OrganizationView & { workspaces: WorkspaceView[] }> {
  const org = await requireOrganization(deps, orgId);
  const [plan, workspaces] = await Promise.all([deps.store.getPlan(org.plan), deps.store.listWorkspaces(orgId)]);
  return { ...toOrganizationView(org, plan, deps.retentionCeilingDays), workspaces: workspaces.map(toWorkspaceView) };
}

/**
 * `org migrate`: rewrites every organization written before plans were records. Its four numbers
 * become its overrides, so its quotas do not change; it stays on the plan name it had. Until it
 * runs, ingest and the other commands already read such an organization the same way.
 */
export async function migrateOrganizations(
  deps: AdminDeps,
  options: { dryRun: boolean },
): Promise<{ dry_run: boolean; organizations: (OrganizationView & { migrated: boolean })[] }> {
  const legacy = await deps.store.listLegacyOrganizations();
  const plans = new Map((await deps.store.listPlans()).map((plan) => [plan.name, plan]));
  const organizations = [];
  for (const org of legacy.sort((a, b) => a.orgId.localeCompare(b.orgId))) {
    const migrated = options.dryRun ? false : await deps.store.migrateLegacyOrganization(org);
    organizations.push({ ...toOrganizationView(org, plans.get(org.plan), deps.retentionCeilingDays), migrated });
  }
  return { dry_run: options.dryRun, organizations };
}

/** Plan quotas an operator gives; on create every window must be given (a number or `null` for unlimited). */
export type PlanQuotaChanges = Partial<Quotas>;

function checkPlanQuotas(quotas: PlanQuotaChanges): void {
  for (const [window, quota] of Object.entries(quotas)) {
    if (quota === (FOLLOW_PLAN as unknown)) throw new AdminCommandError(`a plan's ${window} quota must be a whole number >= 0 or "none"`);
    checkQuota(window, quota);
  }
}

/** Plan settings beside its quotas: the retention in days, or `null` ("none": kept). Absent on create: kept. */
export interface PlanSettings {
  retentionDays?: number | null;
}

/** `plan create`: a new plan; every window's quota is given explicitly, so none is unlimited by omission. */
export async function createPlan(deps: AdminDeps, name: string, quotas: PlanQuotaChanges, settings: PlanSettings = {}): Promise<PlanView> {
  checkPlanName(name);
  const missing = RATE_WINDOWS.filter((window) => quotas[window] === undefined);
  if (missing.length > 0) {
    throw new AdminCommandError(`plan create needs every window's quota: give ${missing.map((w) => `--per-${w}`).join(', ')} (a whole number, or "none" for unlimited)`);
  }
  checkPlanQuotas(quotas);
  checkRetention(settings.retentionDays);
  const now = deps.now().toISOString();
  const plan: Plan = { name, quotas: quotas as Quotas, ...(typeof settings.retentionDays === 'number' ? { retentionDays: settings.retentionDays } : {}), createdAt: now, updatedAt: now };
  await deps.store.putPlan(plan, 'create');
  return toPlanView(plan);
}

/** `plan update`: changes the windows given; every organization on the plan follows within {@link CHANGE_DELAY_SECONDS}. */
export async function updatePlan(deps: AdminDeps, name: string, quotas: PlanQuotaChanges, settings: PlanSettings = {}): Promise<PlanView & { takes_effect_within_seconds: number }> {
  if (RATE_WINDOWS.every((window) => quotas[window] === undefined) && settings.retentionDays === undefined) {
    throw new AdminCommandError('plan update changes nothing without a quota or a retention: give --per-minute, --per-hour, --per-day, --per-month or --retention-days');
  }
  checkPlanQuotas(quotas);
  checkRetention(settings.retentionDays);
  const current = await requirePlan(deps, name);
  refuseKeepingInvalidRetention(`plan '${name}'`, current.invalidRetention, settings.retentionDays, 'N or none');
  refuseKeepingInvalidSetting(`plan '${name}'`, current.invalidSetting, (attribute) => {
    const window = windowOfAttribute(attribute);
    return window !== undefined && quotas[window] !== undefined;
  });
  const { retentionDays: currentRetention, invalidRetention: _replaced, invalidSetting: _replacedSetting, ...unchanged } = current;
  const retentionDays = settings.retentionDays === undefined ? currentRetention : (settings.retentionDays ?? undefined);
  const plan: Plan = { ...unchanged, quotas: { ...current.quotas }, ...(retentionDays === undefined ? {} : { retentionDays }), updatedAt: deps.now().toISOString() };
  for (const window of RATE_WINDOWS) {
    const quota = quotas[window];
    if (quota !== undefined) plan.quotas[window] = quota;
  }
  try {
    await deps.store.putPlan(plan, 'update');
  } catch (error) {
    if (error instanceof TenancyNotFoundError) throw new AdminCommandError(`plan '${name}' does not exist`, { cause: error });
    throw error;
  }
  return { ...toPlanView(plan), takes_effect_within_seconds: CHANGE_DELAY_SECONDS };
}

/** `plan show`. */
export async function showPlan(deps: AdminDeps, name: string): Promise<PlanView> {
  return toPlanView(await requirePlan(deps, name));
}

/** `plan list`: every plan, by name. */
export async function listPlans(deps: AdminDeps): Promise<{ plans: PlanView[] }> {
  const plans = await deps.store.listPlans();
  return { plans: plans.map(toPlanView).sort((a, b) => a.plan.localeCompare(b.plan)) };
}

/** `workspace create`: a workspace of an existing organization. */
export async function createWorkspace(deps: AdminDeps, orgId: string, slug: string): Promise<WorkspaceView> {
  if (!WORKSPACE_SLUG_PATTERN.test(slug)) {
    throw new AdminCommandError(`invalid workspace slug '${slug}': use 1-64 lower-case letters, digits and inner dashes`);
  }
  await requireOrganization(deps, orgId);
  const workspace: Workspace = { orgId, slug, createdAt: deps.now().toISOString() };
  await deps.store.putWorkspace(workspace);
  return toWorkspaceView(workspace);
}

/** `key create`: a new organization key, or a workspace key with `workspaceSlug`; the secret is returned once. */
export async function createApiKey(
  deps: AdminDeps,
  orgId: string,
  options: { workspaceSlug?: string; name?: string } = {},
): Promise<ApiKeyView & { api_key: string }> {
  await requireOrganization(deps, orgId);
  const workspaceSlug = options.workspaceSlug ?? null;
  if (workspaceSlug !== null && !(await deps.store.workspaceExists(orgId, workspaceSlug))) {
    throw new AdminCommandError(`workspace '${workspaceSlug}' does not exist in organization '${orgId}'`);
  }
  const secret = (deps.newSecret ?? generateApiKeySecret)();
  const key: ApiKey = {
    keyId: secret.keyId,
    orgId,
    workspaceSlug,
    status: 'active',
    name: options.name ?? '',
    displayPrefix: secret.displayPrefix,
    createdAt: deps.now().toISOString(),
  };
  await deps.store.putApiKey(key, secret.secretHash);
  return { ...toApiKeyView(key), api_key: secret.secret };
}

/**
 * `key revoke`: marks the key revoked. Revoking a revoked key changes nothing and says so with
 * `already_revoked` (the store keeps the first `revoked_at`).
 */
export async function revokeApiKey(deps: AdminDeps, keyId: string): Promise<ApiKeyView & { already_revoked: boolean }> {
  const revokedAt = deps.now().toISOString();
  const key = await deps.store.revokeApiKey(keyId, revokedAt);
  return { ...toApiKeyView(key), already_revoked: key.revokedAt !== undefined && key.revokedAt !== revokedAt };
}

/** `key list`: the organization's keys, never their secrets. */
export async function listApiKeys(deps: AdminDeps, orgId: string): Promise<{ org_id: string; keys: ApiKeyView[] }> {
  await requireOrganization(deps, orgId);
  const keys = await deps.store.listApiKeys(orgId);
  return { org_id: orgId, keys: keys.map(toApiKeyView).sort((a, b) => a.created_at.localeCompare(b.created_at)) };
}
