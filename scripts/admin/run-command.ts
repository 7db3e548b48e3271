import { parseArgs } from 'node:util';
import type { BillingStatus, PlanStatus, Quotas, RateWindow } from '../../lambda/shared/domain/tenancy.js';
import { RATE_WINDOWS } from '../../lambda/shared/domain/tenancy.js';
import { isRetentionDays, MAX_RETENTION_DAYS } from '../../lambda/shared/domain/retention.js';
import {
  type AdminDeps,
  AdminCommandError,
  createApiKey,
  createOrganization,
  createPlan,
  createWorkspace,
  FOLLOW_PLAN,
  listApiKeys,
  listPlans,
  migrateOrganizations,
  type OrganizationSettings,
  type OverrideChanges,
  type PlanSettings,
  revokeApiKey,
  showOrganization,
  showPlan,
  updateOrganization,
  updatePlan,
} from './commands.js';
import { joinDashValues, refuseRepeatedOptions } from '../cli/command-line.js';
import type { StoredErasures } from '../../lambda/erasure/stored-erasures.js';
import { type EraseDeps, createErasure, listErasures, showErasure } from './erase-commands.js';
import type { WindowUsageReader } from './usage.js';
import { organizationUsage } from './usage.js';

const QUOTA_OPTIONS = ['per-minute', 'per-hour', 'per-day', 'per-month'] as const;
const ORG_SETTINGS = ['plan', ...QUOTA_OPTIONS, 'plan-status', 'billing', 'retention-days'] as const;

interface CommandSpec {
  /** Options after the command words, as the usage line shows them. */
  synopsis: string;
  summary: string;
  allowed: readonly string[];
  required: readonly string[];
}

/** Every admin command: its usage line, what it does, and its options. The usage text and the parser both come from here. */
export const COMMAND_SPECS = {
  'plan create': {
    synopsis: '--plan NAME --per-minute N --per-hour N --per-day N --per-month N [--retention-days N|none]',
    summary: 'create a plan; every window needs a quota ("none" = unlimited); data is kept unless --retention-days says how many days',
    allowed: ['plan', ...QUOTA_OPTIONS, 'retention-days'],
    required: ['plan'],
  },
  'plan update': {
    synopsis: '--plan NAME [--per-minute N] [--per-hour N] [--per-day N] [--per-month N] [--retention-days N|none]',
    summary: 'change a plan\'s quotas or retention; every organization on it follows (ingest within 30 s, the retention sweep on its next run)',
    allowed: ['plan', ...QUOTA_OPTIONS, 'retention-days'],
    required: ['plan'],
  },
  'plan list': { synopsis: '', summary: 'list the plans and their quotas', allowed: [], required: [] },
  'plan show': { synopsis: '--plan NAME', summary: 'show one plan', allowed: ['plan'], required: ['plan'] },
  'org create': {
    synopsis: '--org ID [--plan NAME] [--per-minute N|none] [--per-hour …] [--per-day …] [--per-month …] [--plan-status active|inactive] [--billing ok|past_due] [--retention-days N|none]',
    summary: 'create an organization on a plan (default: "default"); a --per-… or --retention-days option overrides that setting of the plan',
    allowed: ['org', ...ORG_SETTINGS],
    required: ['org'],
  },
  'org update': {
    synopsis: '--org ID [the options of org create; a --per-… or --retention-days value of "plan" drops the override]',
    summary: 'change an organization\'s plan, overrides, retention or statuses; ingest follows within 30 s',
    allowed: ['org', ...ORG_SETTINGS],
    required: ['org'],
  },
  'org show': { synopsis: '--org ID', summary: 'show an organization, the quotas and retention it runs under and its workspaces', allowed: ['org'], required: ['org'] },
  'org usage': {
    synopsis: '--org ID',
    summary: 'each window now: quota, used, remaining and reset; and the retention that applies',
    allowed: ['org'],
    required: ['org'],
  },
  'org migrate': {
    synopsis: '[--dry-run]',
    summary: 'rewrite organizations made before plans were records: their four quotas become overrides',
    allowed: ['dry-run'],
    required: [],
  },
  'workspace create': { synopsis: '--org ID --slug SLUG', summary: 'create a workspace', allowed: ['org', 'slug'], required: ['org', 'slug'] },
  'key create': {
    synopsis: '--org ID [--workspace SLUG] [--name TEXT]',
    summary: 'create an API key (shown once)',
    allowed: ['org', 'workspace', 'name'],
    required: ['org'],
  },
  'key revoke': { synopsis: '--key-id KEY_ID', summary: 'revoke an API key', allowed: ['key-id'], required: ['key-id'] },
  'key list': { synopsis: '--org ID', summary: 'list an organization\'s keys (never their secrets)', allowed: ['org'], required: ['org'] },
  'erase create': {
    synopsis: '--org ID (--user-id U | --session-id S | --trace-id T)…',
    summary:
      'erase the traces of users, conversations or traces received until now; the views hide them at once, compaction rewrites their hours. ' +
      'User and session ids match exactly as sent: case and Unicode form included (Alice is not alice; an é composed is not an e and a combining accent). ' +
      'A trace id is a UUID or 32 hex digits (OpenTelemetry), in either case; it is stored as the lower-case UUID that ingest writes',
    allowed: ['org', 'user-id', 'session-id', 'trace-id'],
    required: ['org'],
  },
  'erase status': { synopsis: '--erasure-id ID [--org ID]', summary: 'an erasure\'s status, hours found and done, rows removed and bytes rewritten', allowed: ['erasure-id', 'org'], required: ['erasure-id'] },
  'erase list': { synopsis: '--org ID', summary: 'an organization\'s erasure requests', allowed: ['org'], required: ['org'] },
} as const satisfies Record<string, CommandSpec>;

export type CommandName = keyof typeof COMMAND_SPECS;
export const COMMANDS = Object.keys(COMMAND_SPECS) as CommandName[];

const HEADER = 'usage: npm run --silent admin -- <command> [options] [--stack NAME --region REGION]';
const TARGET_NOTE = 'Without --stack the command runs against the local stack (npm start). --help after any command or group shows its usage.';

function usageLines(commands: readonly CommandName[]): string {
  return commands.map((name) => `  ${name} ${COMMAND_SPECS[name].synopsis}\n      ${COMMAND_SPECS[name].summary}`).join('\n');
}

export const USAGE = `${HEADER}\n${usageLines(COMMANDS)}\n${TARGET_NOTE}`;

/**
 * The usage for `--help` after some words: one command's, a group's (`org --help`), or all of it.
 * Unknown words get the whole usage.
 */
export function usageFor(words: readonly string[]): string {
  const command = words.slice(0, 2).join(' ');
  if ((COMMANDS as string[]).includes(command)) return `usage: npm run --silent admin -- ${command} ${COMMAND_SPECS[command as CommandName].synopsis}\n  ${COMMAND_SPECS[command as CommandName].summary}`;
  const group = COMMANDS.filter((name) => name.split(' ')[0] === words[0]);
  return group.length > 0 ? `${HEADER}\n${usageLines(group)}\n${TARGET_NOTE}` : USAGE;
}

/** Where the command runs: the local stack (default) or a deployed stack. */
export type TargetSpec = { kind: 'local' } | { kind: 'stack'; stackName: string; region: string };

export interface ParsedCommand {
  command: CommandName;
  options: Record<string, string | boolean | string[] | undefined>;
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
  'retention-days': { type: 'string' },
  slug: { type: 'string' },
  workspace: { type: 'string' },
  name: { type: 'string' },
  'key-id': { type: 'string' },
  'user-id': { type: 'string', multiple: true },
  'session-id': { type: 'string', multiple: true },
  'trace-id': { type: 'string', multiple: true },
  'erasure-id': { type: 'string' },
  'dry-run': { type: 'boolean' },
  stack: { type: 'string' },
  region: { type: 'string' },
} as const;

/** Parses `argv` (without `node` and the script); throws {@link AdminCommandError} with a one-line reason. */
export function parseAdminArgs(argv: readonly string[]): ParsedCommand {
  let parsed;
  try {
    parsed = parseArgs({ args: joinDashValues(argv, OPTIONS), options: OPTIONS, allowPositionals: true, strict: true, tokens: true });
    refuseRepeatedOptions(parsed.tokens, OPTIONS);
  } catch (error) {
    throw new AdminCommandError((error as Error).message.split('\n')[0] ?? 'invalid arguments');
  }
  const command = parsed.positionals.join(' ');
  if (!(COMMANDS as readonly string[]).includes(command)) {
    throw new AdminCommandError(command === '' ? 'no command given; commands: ' + COMMANDS.join(', ') : `unknown command '${command}'; commands: ${COMMANDS.join(', ')}`);
  }
  const name = command as CommandName;
  const spec: CommandSpec = COMMAND_SPECS[name];
  const { stack, region, ...options } = parsed.values as Record<string, string | boolean | string[] | undefined>;
  for (const [option, value] of Object.entries(options)) {
    if (value !== undefined && !spec.allowed.includes(option)) throw new AdminCommandError(`option --${option} does not apply to '${name}'`);
  }
  for (const option of spec.required) {
    if (options[option] === undefined || options[option] === '') throw new AdminCommandError(`'${name}' needs --${option}`);
  }
  if (stack === undefined && region !== undefined) throw new AdminCommandError('--region needs --stack');
  const resolvedRegion = (region as string | undefined) ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
  if (stack !== undefined && !resolvedRegion) throw new AdminCommandError('--stack needs --region (or AWS_REGION)');
  checkOptionValues(name, options);
  return {
    command: name,
    options,
    target: stack === undefined ? { kind: 'local' } : { kind: 'stack', stackName: stack as string, region: resolvedRegion as string },
  };
}

function parseQuota(option: string, value: string | undefined, alsoAllowed = ''): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new AdminCommandError(`--${option} must be a whole number >= 0 or "none"${alsoAllowed}, not '${value}'`);
  }
  return Number(value);
}

function parseChoice<T extends string>(option: string, value: string | undefined, choices: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!(choices as readonly string[]).includes(value)) throw new AdminCommandError(`--${option} must be one of ${choices.join(', ')}, not '${value}'`);
  return value as T;
}

/** `--retention-days`: whole days, "none" (kept), or, where `alsoPlan`, "plan" (drop the override). */
function parseRetentionDays(value: string | undefined, alsoPlan: boolean): number | null | typeof FOLLOW_PLAN | undefined {
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  if (alsoPlan && value === FOLLOW_PLAN) return FOLLOW_PLAN;
  if (!/^\d+$/.test(value) || !isRetentionDays(Number(value))) {
    throw new AdminCommandError(`--retention-days must be a whole number of days from 1 to ${MAX_RETENTION_DAYS} or "none"${alsoPlan ? ', or "plan" to follow the plan' : ''}, not '${value}'`);
  }
  return Number(value);
}

/** A plan's settings beside its quotas (`--retention-days`). */
export function planSettings(options: Options): PlanSettings {
  const retentionDays = parseRetentionDays(text(options, 'retention-days'), false) as number | null | undefined;
  return retentionDays === undefined ? {} : { retentionDays };
}

const WINDOW_OF_OPTION = Object.fromEntries(RATE_WINDOWS.map((window) => [`per-${window}`, window])) as Record<(typeof QUOTA_OPTIONS)[number], RateWindow>;

type Options = Record<string, string | boolean | string[] | undefined>;
const texts = (options: Options, name: string): string[] => (Array.isArray(options[name]) ? (options[name] as string[]) : []);
const text = (options: Options, name: string): string | undefined => (typeof options[name] === 'string' ? (options[name] as string) : undefined);

/** A plan's quotas from `--per-…` options: a whole number, or "none" for unlimited. */
export function planQuotas(options: Options): Partial<Quotas> {
  const quotas: Partial<Quotas> = {};
  for (const option of QUOTA_OPTIONS) {
    const quota = parseQuota(option, text(options, option));
    if (quota !== undefined) quotas[WINDOW_OF_OPTION[option]] = quota;
  }
  return quotas;
}

export function organizationSettings(options: Options): OrganizationSettings {
  const overrides: OverrideChanges = {};
  for (const option of QUOTA_OPTIONS) {
    const value = text(options, option);
    if (value === FOLLOW_PLAN) overrides[WINDOW_OF_OPTION[option]] = FOLLOW_PLAN;
    else {
      const quota = parseQuota(option, value, ', or "plan" to follow the plan');
      if (quota !== undefined) overrides[WINDOW_OF_OPTION[option]] = quota;
    }
  }
  const settings: OrganizationSettings = { overrides };
  const plan = text(options, 'plan');
  if (plan !== undefined) settings.plan = plan;
  const planStatus = parseChoice<PlanStatus>('plan-status', text(options, 'plan-status'), ['active', 'inactive']);
  if (planStatus) settings.planStatus = planStatus;
  const billing = parseChoice<BillingStatus>('billing', text(options, 'billing'), ['ok', 'past_due']);
  if (billing) settings.billingStatus = billing;
  const retentionDays = parseRetentionDays(text(options, 'retention-days'), true);
  if (retentionDays !== undefined) settings.retentionDays = retentionDays;
  return settings;
}

/** Refuses a bad number or choice before the command reaches any table. */
function checkOptionValues(command: CommandName, options: Options): void {
  if (command === 'org create' || command === 'org update') organizationSettings(options);
  if (command === 'plan create' || command === 'plan update') {
    planQuotas(options);
    planSettings(options);
  }
}

/** What the commands run on: the tenancy store, the rate windows for `org usage`, the erasure requests for `erase`. */
export type CommandDeps = AdminDeps & { usage?: WindowUsageReader; erasures?: StoredErasures };

function eraseDeps(deps: CommandDeps): EraseDeps {
  if (!deps.erasures) throw new AdminCommandError('erase commands need the data bucket');
  return { ...deps, erasures: deps.erasures };
}

/** Runs one parsed command; the result is the JSON document to print. */
export async function runAdminCommand(deps: CommandDeps, { command, options }: Pick<ParsedCommand, 'command' | 'options'>): Promise<unknown> {
  const org = text(options, 'org') as string;
  const plan = text(options, 'plan') as string;
  switch (command) {
    case 'plan create':
      return createPlan(deps, plan, planQuotas(options), planSettings(options));
    case 'plan update':
      return updatePlan(deps, plan, planQuotas(options), planSettings(options));
    case 'plan list':
      return listPlans(deps);
    case 'plan show':
      return showPlan(deps, plan);
    case 'org create':
      return createOrganization(deps, org, organizationSettings(options));
    case 'org update':
      return updateOrganization(deps, org, organizationSettings(options));
    case 'org show':
      return showOrganization(deps, org);
    case 'org usage':
      if (!deps.usage) throw new AdminCommandError('org usage needs the rate-window table');
      return organizationUsage({ ...deps, usage: deps.usage }, org);
    case 'org migrate':
      return migrateOrganizations(deps, { dryRun: options['dry-run'] === true });
    case 'workspace create':
      return createWorkspace(deps, org, text(options, 'slug') as string);
    case 'key create':
      return createApiKey(deps, org, {
        ...(text(options, 'workspace') !== undefined ? { workspaceSlug: text(options, 'workspace') as string } : {}),
        ...(text(options, 'name') !== undefined ? { name: text(options, 'name') as string } : {}),
      });
    case 'key revoke':
      return revokeApiKey(deps, text(options, 'key-id') as string);
    case 'key list':
      return listApiKeys(deps, org);
    case 'erase create':
      return createErasure(eraseDeps(deps), org, { user_ids: texts(options, 'user-id'), session_ids: texts(options, 'session-id'), trace_ids: texts(options, 'trace-id') });
    case 'erase status':
      return showErasure(eraseDeps(deps), text(options, 'erasure-id') as string, text(options, 'org'));
    case 'erase list':
      return listErasures(eraseDeps(deps), org);
  }
}
