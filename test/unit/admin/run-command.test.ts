import { AdminCommandError } from '../../../scripts/admin/commands.js';
import { COMMANDS, organizationSettings, parseAdminArgs, planQuotas, planSettings, USAGE, usageFor } from '../../../scripts/admin/run-command.js';

describe('parseAdminArgs', () => {
  it('parses a two-word command with its options against the local stack by default', () => {
    expect(parseAdminArgs(['key', 'create', '--org', 'acme', '--workspace', 'prod', '--name', 'ci bot'])).toEqual({
      command: 'key create',
      options: { org: 'acme', workspace: 'prod', name: 'ci bot' },
      target: { kind: 'local' },
    });
  });

  it('targets a deployed stack with --stack and --region', () => {
    expect(parseAdminArgs(['org', 'show', '--org', 'a', '--stack', 'TraceIngest', '--region', 'eu-west-1']).target).toEqual({
      kind: 'stack',
      stackName: 'TraceIngest',
      region: 'eu-west-1',
    });
  });

  it.each([
    [[], 'no command given'],
    [['org', 'delete', '--org', 'a'], "unknown command 'org delete'"],
    [['org', 'create'], "'org create' needs --org"],
    [['workspace', 'create', '--org', 'a'], "'workspace create' needs --slug"],
    [['key', 'list', '--org', 'a', '--slug', 's'], "option --slug does not apply to 'key list'"],
    [['org', 'show', '--org', 'a', '--verbose'], "Unknown option '--verbose'"],
    [['org', 'show', '--org', 'a', '--region', 'x'], '--region needs --stack'],
  ])('refuses %j with a one-line reason', (argv, message) => {
    expect(() => parseAdminArgs(argv)).toThrow(AdminCommandError);
    expect(() => parseAdminArgs(argv)).toThrow(message);
  });
});

describe('organizationSettings', () => {
  it('reads quotas, with "none" as unlimited, and the statuses', () => {
    expect(
      organizationSettings({ 'per-minute': '10', 'per-month': 'none', plan: 'pro', 'plan-status': 'inactive', billing: 'past_due' }),
    ).toEqual({ plan: 'pro', planStatus: 'inactive', billingStatus: 'past_due', overrides: { minute: 10, month: null } });
  });

  it('reads --retention-days as days, "none" (kept) or, on an organization, "plan" (follow the plan)', () => {
    expect(organizationSettings({ 'retention-days': '30' })).toEqual({ overrides: {}, retentionDays: 30 });
    expect(organizationSettings({ 'retention-days': 'none' })).toEqual({ overrides: {}, retentionDays: null });
    expect(organizationSettings({ 'retention-days': 'plan' })).toEqual({ overrides: {}, retentionDays: 'plan' });
    expect(planSettings({ 'retention-days': '400' })).toEqual({ retentionDays: 400 });
    expect(planSettings({ 'retention-days': 'none' })).toEqual({ retentionDays: null });
    expect(() => parseAdminArgs(['plan', 'update', '--plan', 'team', '--retention-days', 'plan'])).toThrow('--retention-days must be a whole number of days from 1 to 36500 or "none", not \'plan\'');
    expect(() => parseAdminArgs(['org', 'update', '--org', 'acme', '--retention-days', '0'])).toThrow(
      '--retention-days must be a whole number of days from 1 to 36500 or "none", or "plan" to follow the plan, not \'0\'',
    );
    expect(parseAdminArgs(['plan', 'create', '--plan', 'team', '--per-minute', '1', '--per-hour', '1', '--per-day', '1', '--per-month', '1', '--retention-days', '14']).options).toMatchObject({ 'retention-days': '14' });
  });

  it('reads "plan" as dropping the override of that window', () => {
    expect(organizationSettings({ 'per-hour': 'plan' })).toEqual({ overrides: { hour: 'plan' } });
  });

  it('refuses an option given twice instead of keeping the last (issue 27)', () => {
    expect(() => parseAdminArgs(['org', 'update', '--org', 'acme', '--per-minute', '5', '--per-minute', '7'])).toThrow('option --per-minute is given more than once');
    expect(() => parseAdminArgs(['org', 'update', '--org', 'acme', '--org', 'other', '--per-minute', '5'])).toThrow('option --org is given more than once');
    expect(parseAdminArgs(['org', 'update', '--org', 'acme', '--per-minute', '5', '--per-hour', '7'])).toBeDefined();
  });

  it('refuses a negative quota given as a separate argument with the CLI\'s own message, not the parser\'s', () => {
    expect(() => parseAdminArgs(['org', 'update', '--org', 'acme', '--per-minute', '-5'])).toThrow(
      '--per-minute must be a whole number >= 0 or "none", or "plan" to follow the plan, not \'-5\'',
    );
    expect(() => parseAdminArgs(['plan', 'update', '--plan', 'team', '--per-day', '-1'])).toThrow('--per-day must be a whole number >= 0 or "none", not \'-1\'');
    expect(planQuotas({ 'per-day': 'none', 'per-hour': '7' })).toEqual({ day: null, hour: 7 });
  });

  it.each([
    [{ 'per-hour': '-1' }, '--per-hour must be a whole number >= 0 or "none"'],
    [{ 'per-day': '1.5' }, '--per-day must be a whole number'],
    [{ billing: 'late' }, '--billing must be one of ok, past_due'],
    [{ 'plan-status': 'paused' }, '--plan-status must be one of active, inactive'],
  ])('refuses %j', (options, message) => {
    expect(() => organizationSettings(options)).toThrow(message);
  });
});

describe('usage', () => {
  it('names every command in the whole usage, and only its group or itself after a group or a command', () => {
    for (const command of COMMANDS) expect(USAGE).toContain(`  ${command} `);
    expect(usageFor(['plan'])).toContain('plan create');
    expect(usageFor(['plan'])).not.toContain('key create');
    expect(usageFor(['org', 'usage'])).toMatch(/^usage: npm run --silent admin -- org usage --org ID\n/);
    expect(usageFor(['nonsense'])).toBe(USAGE);
  });
});
