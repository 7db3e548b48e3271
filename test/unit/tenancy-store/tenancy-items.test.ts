import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { type Item, toApiKey, toOrganization, toPlan } from '../../../lambda/tenancy-store/tenancy-items.js';

/**
 * Items as read: what the admin CLI writes comes back as it was written; a stored value it would refuse (a console
 * edit, a migration) comes back as an invalid setting, quoted, and never as a value anything acts on.
 */

const AT = '2026-12-01T00:00:00.000Z';

const orgItem = (extra: Item = {}): Item => ({
  pk: { S: 'ORG#acme' },
  sk: { S: 'ORG' },
  org_id: { S: 'acme' },
  plan: { S: 'team' },
  overrides: { M: {} },
  plan_status: { S: 'active' },
  billing_status: { S: 'ok' },
  created_at: { S: AT },
  updated_at: { S: AT },
  ...extra,
});

const planItem = (extra: Item = {}): Item => ({ pk: { S: 'PLANS' }, sk: { S: 'PLAN#team' }, plan_name: { S: 'team' }, created_at: { S: AT }, updated_at: { S: AT }, ...extra });

describe('toOrganization', () => {
  it('reads what the CLI writes: overrides with NULL as unlimited, both statuses, the retention', () => {
    const item = orgItem({ overrides: { M: { minute: { N: '5' }, hour: { NULL: true }, day: { N: '0' } } }, retention_days: { N: '30' }, plan_status: { S: 'inactive' }, billing_status: { S: 'past_due' } });
    expect(toOrganization(item)).toEqual({
      orgId: 'acme',
      plan: 'team',
      overrides: { minute: 5, hour: null, day: 0 },
      retentionDays: 30,
      planStatus: 'inactive',
      billingStatus: 'past_due',
      createdAt: AT,
      updatedAt: AT,
    });
    expect(toOrganization(item)).not.toHaveProperty('invalidRetention');
  });

  it('reads an organization from before plans were records: its four numbers are its overrides, absent ones unlimited', () => {
    const { overrides: _none, ...legacy } = orgItem({ quota_minute: { N: '1' }, quota_hour: { N: '2' }, quota_day: { N: '3' } });
    expect(toOrganization(legacy).overrides).toEqual({ minute: 1, hour: 2, day: 3, month: null });
    expect(toOrganization(legacy)).not.toHaveProperty('invalidSetting');
  });

  it('reads an item without statuses as an inactive plan with no billing issue, and an empty item as nothing usable', () => {
    const { plan_status: _p, billing_status: _b, ...item } = orgItem();
    expect(toOrganization(item)).toMatchObject({ planStatus: 'inactive', billingStatus: 'ok' });
    expect(toOrganization({})).toEqual({
      orgId: '',
      plan: '',
      overrides: { minute: null, hour: null, day: null, month: null },
      planStatus: 'inactive',
      billingStatus: 'ok',
      createdAt: '',
      updatedAt: '',
      invalidSetting: { attribute: 'plan', stored: 'absent' },
    });
  });

  it.each<[string, Item, string, string]>([
    ['a plan name outside the pattern', { plan: { S: 'team plan' } }, 'plan', '{"S":"team plan"}'],
    ['a plan that is not a string', { plan: { N: '1' } }, 'plan', '{"N":"1"}'],
    ['a plan status outside its values', { plan_status: { S: 'ACTIVE' } }, 'plan_status', '{"S":"ACTIVE"}'],
    ['a plan status that is not a string', { plan_status: { BOOL: true } }, 'plan_status', '{"BOOL":true}'],
    ['a billing status outside its values', { billing_status: { S: 'fine' } }, 'billing_status', '{"S":"fine"}'],
    ['overrides that are not a map', { overrides: { NULL: true } }, 'overrides', '{"NULL":true}'],
    ['a negative override', { overrides: { M: { minute: { N: '-1' } } } }, 'overrides.minute', '{"N":"-1"}'],
    ['a fractional override', { overrides: { M: { hour: { N: '1.5' } } } }, 'overrides.hour', '{"N":"1.5"}'],
    ['an override beyond a safe integer', { overrides: { M: { day: { N: '9007199254740993' } } } }, 'overrides.day', '{"N":"9007199254740993"}'],
    ['an override as a string', { overrides: { M: { month: { S: '100' } } } }, 'overrides.month', '{"S":"100"}'],
    ['an override of a window that does not exist', { overrides: { M: { week: { N: '1' } } } }, 'overrides.week', '{"N":"1"}'],
    ['a legacy quota that is negative', { overrides: undefined as unknown as AttributeValue, quota_minute: { N: '-5' } }, 'quota_minute', '{"N":"-5"}'],
  ])('reads %s as an invalid setting, quoted, that grants nothing', (_, extra, attribute, stored) => {
    const item = orgItem(extra);
    if (item.overrides === undefined) delete item.overrides;
    const org = toOrganization(item);
    expect(org.invalidSetting).toEqual({ attribute, stored });
    const window = /^(?:overrides\.|quota_)(minute|hour|day|month)$/.exec(attribute)?.[1] as 'minute' | undefined;
    if (window) expect(org.overrides[window]).toBe(0);
    else expect(Object.values(org.overrides).filter((quota) => quota !== null)).toEqual([]);
    if (attribute === 'plan_status') expect(org.planStatus).toBe('inactive');
    if (attribute === 'billing_status') expect(org.billingStatus).toBe('past_due');
  });

  it('reports the first invalid setting and keeps the valid ones as they are', () => {
    const org = toOrganization(orgItem({ plan_status: { S: 'paused' }, overrides: { M: { minute: { N: '7' }, hour: { N: '-1' } } } }));
    expect(org.invalidSetting).toEqual({ attribute: 'overrides.hour', stored: '{"N":"-1"}' });
    expect(org.overrides).toEqual({ minute: 7, hour: 0 });
    expect(org.planStatus).toBe('inactive');
  });

  it('quotes at most 80 characters of a stored value, saying how long it was', () => {
    const long = 'x'.repeat(200);
    const quoted = `{"S":"${long}"}`;
    expect(toOrganization(orgItem({ plan_status: { S: long } })).invalidSetting?.stored).toBe(`${quoted.slice(0, 80)}… (${quoted.length} characters)`);
    const fits = 'y'.repeat(80 - '{"S":""}'.length);
    expect(toOrganization(orgItem({ plan_status: { S: fits } })).invalidSetting?.stored).toBe(`{"S":"${fits}"}`);
    const over = `${fits}z`;
    expect(toOrganization(orgItem({ plan_status: { S: over } })).invalidSetting?.stored).toBe(`${`{"S":"${over}"}`.slice(0, 80)}… (81 characters)`);
  });

  it('reads NULL retention as kept, an invalid one as invalid and never as days', () => {
    expect(toOrganization(orgItem({ retention_days: { NULL: true } })).retentionDays).toBeNull();
    const invalid = toOrganization(orgItem({ retention_days: { N: '0' } }));
    expect(invalid).not.toHaveProperty('retentionDays');
    expect(invalid.invalidRetention).toBe('{"N":"0"}');
    expect(invalid).not.toHaveProperty('invalidSetting');
  });
});

describe('toPlan', () => {
  it('reads the quotas, absent ones unlimited, and a retention in days', () => {
    expect(toPlan(planItem({ quota_minute: { N: '10' }, quota_day: { N: '0' }, retention_days: { N: '7' } }))).toEqual({
      name: 'team',
      quotas: { minute: 10, hour: null, day: 0, month: null },
      retentionDays: 7,
      createdAt: AT,
      updatedAt: AT,
    });
  });

  it('reads an invalid retention as invalid and never as days', () => {
    const plan = toPlan(planItem({ retention_days: { N: '-3' } }));
    expect(plan.invalidRetention).toBe('{"N":"-3"}');
    expect(plan).not.toHaveProperty('retentionDays');
    expect(toPlan(planItem({ retention_days: { N: '3' } }))).not.toHaveProperty('invalidRetention');
  });

  it('reads a NULL retention as kept, as an absent one', () => {
    expect(toPlan(planItem({ retention_days: { NULL: true } }))).not.toHaveProperty('retentionDays');
    expect(toPlan(planItem({ retention_days: { NULL: true } }))).not.toHaveProperty('invalidRetention');
  });

  it.each<[string, Item, string, string]>([
    ['a negative quota', { quota_hour: { N: '-1' } }, 'quota_hour', '{"N":"-1"}'],
    ['a fractional quota', { quota_minute: { N: '0.5' } }, 'quota_minute', '{"N":"0.5"}'],
    ['a quota as a string', { quota_month: { S: '1000' } }, 'quota_month', '{"S":"1000"}'],
    ['a NULL quota (the CLI leaves an unlimited one out)', { quota_day: { NULL: true } }, 'quota_day', '{"NULL":true}'],
    ['a name outside the pattern', { plan_name: { S: '' } }, 'plan_name', '{"S":""}'],
  ])('reads %s as an invalid setting whose quota grants nothing', (_, extra, attribute, stored) => {
    const plan = toPlan(planItem(extra));
    expect(plan.invalidSetting).toEqual({ attribute, stored });
    if (attribute.startsWith('quota_')) expect(plan.quotas[attribute.slice('quota_'.length) as 'minute']).toBe(0);
  });

  it('reads an item without a name as an invalid setting', () => {
    const { plan_name: _n, ...item } = planItem();
    expect(toPlan(item)).toMatchObject({ name: '', invalidSetting: { attribute: 'plan_name', stored: 'absent' } });
    expect(toPlan({})).toEqual({ name: '', quotas: { minute: null, hour: null, day: null, month: null }, createdAt: '', updatedAt: '', invalidSetting: { attribute: 'plan_name', stored: 'absent' } });
  });
});

describe('toApiKey', () => {
  const keyItem = (extra: Item = {}): Item => ({
    key_id: { S: 'key_1' },
    org_id: { S: 'acme' },
    status: { S: 'active' },
    name: { S: 'ci' },
    display_prefix: { S: 'tik_abcdefgh' },
    created_at: { S: AT },
    ...extra,
  });

  it('reads an organization key and a workspace key with its revocation', () => {
    expect(toApiKey(keyItem())).toEqual({ keyId: 'key_1', orgId: 'acme', workspaceSlug: null, status: 'active', name: 'ci', displayPrefix: 'tik_abcdefgh', createdAt: AT });
    expect(toApiKey(keyItem())).not.toHaveProperty('revokedAt');
    expect(toApiKey(keyItem({ workspace_slug: { S: 'prod' }, status: { S: 'revoked' }, revoked_at: { S: AT } }))).toMatchObject({ workspaceSlug: 'prod', status: 'revoked', revokedAt: AT });
  });

  it('reads any status but active as revoked, and an empty item as a revoked key of nothing', () => {
    expect(toApiKey(keyItem({ status: { S: 'Active' } })).status).toBe('revoked');
    expect(toApiKey({})).toEqual({ keyId: '', orgId: '', workspaceSlug: null, status: 'revoked', name: '', displayPrefix: '', createdAt: '' });
  });
});
