import type { DynamoDbTenancyStore } from '../../lambda/shared/adapters/dynamodb-tenancy-store.js';
import {
  type ApiKey,
  type BillingStatus,
  DEFAULT_QUOTAS,
  generateApiKeySecret,
  type NewApiKeySecret,
  newOrgIdProblem,
  ORG_ID_PATTERN,
  type Organization,
  type PlanStatus,
  type Quotas,
  RATE_WINDOWS,
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
  'getOrganization' | 'putOrganization' | 'putWorkspace' | 'workspaceExists' | 'listWorkspaces' | 'putApiKey' | 'listApiKeys' | 'revokeApiKey'
>;

export interface AdminDeps {
  store: TenancyAdminStore;
  now: () => Date;
  newSecret?: () => NewApiKeySecret;
}

/** Organization settings an operator may set; absent members keep their value (or the default on create). */
export interface OrganizationSettings {
  plan?: string;
  planStatus?: PlanStatus;
  billingStatus?: BillingStatus;
  quotas?: Partial<Quotas>;
}

export const DEFAULT_PLAN = 'default';

export interface OrganizationView {
  org_id: string;
  plan: string;
  plan_status: PlanStatus;
  billing_status: BillingStatus;
  /** Traces per window; `null` is unlimited. */
  quotas: Quotas;
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

export const toOrganizationView = (org: Organization): OrganizationView => ({
  org_id: org.orgId,
  plan: org.plan,
  plan_status: org.planStatus,
  billing_status: org.billingStatus,
  quotas: org.quotas,
  created_at: org.createdAt,
  updated_at: org.updatedAt,
});

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

function checkSettings(settings: OrganizationSettings): void {
  if (settings.plan !== undefined && settings.plan.trim() === '') throw new AdminCommandError('the plan name must not be empty');
  for (const [window, quota] of Object.entries(settings.quotas ?? {})) {
    if (quota !== null && quota !== undefined && !(Number.isSafeInteger(quota) && quota >= 0)) {
      throw new AdminCommandError(`the ${window} quota must be a whole number >= 0 or "none"`);
    }
  }
}

function mergeQuotas(base: Quotas, changes: Partial<Quotas> = {}): Quotas {
  const quotas = { ...base };
  for (const window of RATE_WINDOWS) {
    const value = changes[window];
    if (value !== undefined) quotas[window] = value;
  }
  return quotas;
}

async function requireOrganization(deps: AdminDeps, orgId: string): Promise<Organization> {
  checkOrgId(orgId);
  const org = await deps.store.getOrganization(orgId);
  if (!org) throw new AdminCommandError(`organization '${orgId}' does not exist`);
  return org;
}

/** `org create`: an active organization with the default quotas unless told otherwise; refuses an existing id. */
export async function createOrganization(deps: AdminDeps, orgId: string, settings: OrganizationSettings = {}): Promise<OrganizationView> {
  // Stricter than for an existing organization, which stays manageable whatever its id.
  const problem = newOrgIdProblem(orgId);
  if (problem !== undefined) throw new AdminCommandError(problem);
  checkSettings(settings);
  const now = deps.now().toISOString();
  const org: Organization = {
    orgId,
    plan: settings.plan ?? DEFAULT_PLAN,
    planStatus: settings.planStatus ?? 'active',
    billingStatus: settings.billingStatus ?? 'ok',
    quotas: mergeQuotas(DEFAULT_QUOTAS, settings.quotas),
    createdAt: now,
    updatedAt: now,
  };
  await deps.store.putOrganization(org, { createOnly: true });
  return toOrganizationView(org);
}

/** `org update`: changes only the settings given; at least one must be. */
export async function updateOrganization(deps: AdminDeps, orgId: string, settings: OrganizationSettings): Promise<OrganizationView> {
  const given = [settings.plan, settings.planStatus, settings.billingStatus, ...Object.values(settings.quotas ?? {})];
  if (given.every((value) => value === undefined)) {
    throw new AdminCommandError(
      'org update changes nothing without an option: give --plan, --plan-status, --billing or a quota (--per-minute, --per-hour, --per-day, --per-month)',
    );
  }
  checkSettings(settings);
  const current = await requireOrganization(deps, orgId);
  const org: Organization = {
    ...current,
    plan: settings.plan ?? current.plan,
    planStatus: settings.planStatus ?? current.planStatus,
    billingStatus: settings.billingStatus ?? current.billingStatus,
    quotas: mergeQuotas(current.quotas, settings.quotas),
    updatedAt: deps.now().toISOString(),
  };
  await deps.store.putOrganization(org, { createOnly: false });
  return toOrganizationView(org);
}

/** `org show`: the organization with its workspaces. */
export async function showOrganization(deps: AdminDeps, orgId: string): Promise<OrganizationView & { workspaces: WorkspaceView[] }> {
  const org = await requireOrganization(deps, orgId);
  const workspaces = await deps.store.listWorkspaces(orgId);
  return { ...toOrganizationView(org), workspaces: workspaces.map(toWorkspaceView) };
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
