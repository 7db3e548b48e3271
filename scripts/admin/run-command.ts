import { parseArgs } from 'node:util';
import type { BillingStatus, PlanStatus, Quotas } from '../../lambda/shared/domain/tenancy.js';
import {
  type AdminDeps,
  AdminCommandError,
  createApiKey,
  createOrganization,
  createWorkspace,
  listApiKeys,
  type OrganizationSettings,
  revokeApiKey,
  showOrganization,
  updateOrganization,
} from './commands.js';

export const USAGE = `usage: npm run --silent admin -- <command> [--stack NAME --region REGION]
  org create --org ID [--plan NAME] [--per-minute N] [--per-hour N] [--per-day N] [--per-month N]
             [--plan-status active|inactive] [--billing ok|past_due]
  org update --org ID [the same options]          (a quota of "none" means unlimited)
  org show   --org ID
  workspace create --org ID --slug SLUG
  key create --org ID [--workspace SLUG] [--name TEXT]
  key revoke --key-id KEY_ID
  key list   --org ID`;

export const COMMANDS = ['org create', 'org update', 'org show', 'workspace create', 'key create', 'key revoke', 'key list'] as const;
export type CommandName = (typeof COMMANDS)[number];

/** Where the command runs: the local stack (default) or a deployed stack. */
export type TargetSpec = { kind: 'local' } | { kind: 'stack'; stackName: string; region: string };

export interface ParsedCommand {
  command: CommandName;
  options: Record<string, string | undefined>;
  target: TargetSpec;
}

const OPTIONS = {
  org: { type: 'string' },
  plan: { type: 'string' },
  'per-minute': { type: 'string' },
  'per-hour': { type: 'string' },
  'per-day': { type: 'string' },
  'per-month': { type: 'string' },
  'plan-status': { type: 'string' },
  billing: { type: 'string' },
  slug: { type: 'string' },
  workspace: { type: 'string' },
  name: { type: 'string' },
  'key-id': { type: 'string' },
  stack: { type: 'string' },
  region: { type: 'string' },
} as const;

const ALLOWED: Record<CommandName, readonly string[]> = {
  'org create': ['org', 'plan', 'per-minute', 'per-hour', 'per-day', 'per-month', 'plan-status', 'billing'],
  'org update': ['org', 'plan', 'per-minute', 'per-hour', 'per-day', 'per-month', 'plan-status', 'billing'],
  'org show': ['org'],
  'workspace create': ['org', 'slug'],
  'key create': ['org', 'workspace', 'name'],
  'key revoke': ['key-id'],
  'key list': ['org'],
};

const REQUIRED: Record<CommandName, readonly string[]> = {
  'org create': ['org'],
  'org update': ['org'],
  'org show': ['org'],
  'workspace create': ['org', 'slug'],
  'key create': ['org'],
  'key revoke': ['key-id'],
  'key list': ['org'],
};

/** Parses `argv` (without `node` and the script); throws {@link AdminCommandError} with a one-line reason. */
export function parseAdminArgs(argv: readonly string[]): ParsedCommand {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new AdminCommandError((error as Error).message.split('\n')[0] ?? 'invalid arguments');
  }
  const command = parsed.positionals.join(' ');
  if (!(COMMANDS as readonly string[]).includes(command)) {
    throw new AdminCommandError(command === '' ? 'no command given; commands: ' + COMMANDS.join(', ') : `unknown command '${command}'; commands: ${COMMANDS.join(', ')}`);
  }
  const name = command as CommandName;
  const { stack, region, ...options } = parsed.values as Record<string, string | undefined>;
  for (const [option, value] of Object.entries(options)) {
    if (value !== undefined && !ALLOWED[name].includes(option)) throw new AdminCommandError(`option --${option} does not apply to '${name}'`);
  }
  for (const option of REQUIRED[name]) {
    if (options[option] === undefined || options[option] === '') throw new AdminCommandError(`'${name}' needs --${option}`);
  }
  if (stack === undefined && region !== undefined) throw new AdminCommandError('--region needs --stack');
  const resolvedRegion = region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
  if (stack !== undefined && !resolvedRegion) throw new AdminCommandError('--stack needs --region (or AWS_REGION)');
  return {
    command: name,
    options,
    target: stack === undefined ? { kind: 'local' } : { kind: 'stack', stackName: stack, region: resolvedRegion as string },
  };
}

function parseQuota(option: string, value: string | undefined): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) throw new AdminCommandError(`--${option} must be a whole number >= 0 or "none", not '${value}'`);
  return Number(value);
}

function parseChoice<T extends string>(option: string, value: string | undefined, choices: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!(choices as readonly string[]).includes(value)) throw new AdminCommandError(`--${option} must be one of ${choices.join(', ')}, not '${value}'`);
  return value as T;
}

export function organizationSettings(options: Record<string, string | undefined>): OrganizationSettings {
  const quotas: Partial<Quotas> = {};
  const windows = { minute: 'per-minute', hour: 'per-hour', day: 'per-day', month: 'per-month' } as const;
  for (const [window, option] of Object.entries(windows) as [keyof Quotas, string][]) {
    const quota = parseQuota(option, options[option]);
    if (quota !== undefined) quotas[window] = quota;
  }
  const settings: OrganizationSettings = { quotas };
  if (options.plan !== undefined) settings.plan = options.plan;
  const planStatus = parseChoice<PlanStatus>('plan-status', options['plan-status'], ['active', 'inactive']);
  if (planStatus) settings.planStatus = planStatus;
  const billing = parseChoice<BillingStatus>('billing', options.billing, ['ok', 'past_due']);
  if (billing) settings.billingStatus = billing;
  return settings;
}

/** Runs one parsed command; the result is the JSON document to print. */
export async function runAdminCommand(deps: AdminDeps, { command, options }: Pick<ParsedCommand, 'command' | 'options'>): Promise<unknown> {
  const org = options.org as string;
  switch (command) {
    case 'org create':
      return createOrganization(deps, org, organizationSettings(options));
    case 'org update':
      return updateOrganization(deps, org, organizationSettings(options));
    case 'org show':
      return showOrganization(deps, org);
    case 'workspace create':
      return createWorkspace(deps, org, options.slug as string);
    case 'key create':
      return createApiKey(deps, org, {
        ...(options.workspace !== undefined ? { workspaceSlug: options.workspace } : {}),
        ...(options.name !== undefined ? { name: options.name } : {}),
      });
    case 'key revoke':
      return revokeApiKey(deps, options['key-id'] as string);
    case 'key list':
      return listApiKeys(deps, org);
  }
}
