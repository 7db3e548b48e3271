import { TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyResult } from 'aws-lambda';
import 'aws-sdk-client-mock-jest';
import { NoActivePlanError } from '../../../lambda/ingest/core/errors.js';
import { identifyCaller, INVALID_TENANCY_SETTING_METRIC } from '../../../lambda/ingest/core/tenancy/identify-caller.js';
import type { TenancyReader } from '../../../lambda/ingest/core/tenancy/ports.js';
import { type ApiKey, generateApiKeySecret, type Organization, type Plan } from '../../../lambda/shared/domain/tenancy.js';
import { buildBatch, gatewayEvent } from '../../../devkit/builders/trace-builders.js';
import { createHarness, ddbMock } from '../../support/ingest-harness.js';

/**
 * A stored setting the admin CLI would refuse is never acted on (docs/operations.md, ApiClientErrorRate): ingest
 * answers the organization 403 `no_active_plan`, logs what is wrong for the operator and counts it.
 */

const body = (response: APIGatewayProxyResult) => JSON.parse(response.body) as Record<string, unknown>;
const secret = generateApiKeySecret();
const key: ApiKey = { keyId: 'key_1', orgId: 'acme', workspaceSlug: null, status: 'active', name: '', displayPrefix: '', createdAt: '' };
const org = (extra: Partial<Organization> = {}): Organization => ({ orgId: 'acme', plan: 'team', overrides: {}, planStatus: 'active', billingStatus: 'ok', createdAt: '', updatedAt: '', ...extra });
const plan = (extra: Partial<Plan> = {}): Plan => ({ name: 'team', quotas: { minute: 1, hour: 2, day: 3, month: 4 }, createdAt: '', updatedAt: '', ...extra });

function identify(stored: { org: Organization; plan?: Plan }) {
  const errors: { message: string; extra: unknown }[] = [];
  const counted: { name: string; value: number }[] = [];
  const planReads: string[] = [];
  const tenancy: TenancyReader = {
    getApiKeyByHash: async () => key,
    getOrganization: async () => stored.org,
    getPlan: async (name) => (planReads.push(name), stored.plan),
    workspaceExists: async () => true,
  };
  const deps = {
    tenancy,
    logger: { warn: () => undefined, error: (message: string, extra: unknown) => void errors.push({ message, extra }) },
    metrics: { count: (name: string, value: number) => void counted.push({ name, value }) },
  };
  return { result: identifyCaller(deps, [secret.secret]), errors, counted, planReads };
}

describe('a stored tenancy setting the admin CLI would refuse, on the ingest path', () => {
  it('refuses an organization whose own item holds one, logging the attribute as stored and counting it once', async () => {
    const s = identify({ org: org({ overrides: { minute: 0 }, invalidSetting: { attribute: 'overrides.minute', stored: '{"S":"5"}' } }), plan: plan() });
    await expect(s.result).rejects.toThrow(new NoActivePlanError('Organization has no active plan: its stored plan settings cannot be used until the operator fixes them'));
    expect(s.errors).toEqual([
      {
        message: 'Tenancy: a stored setting the admin CLI would refuse; the organization is answered 403 no_active_plan until it is fixed',
        extra: { org_id: 'acme', plan: 'team', item: 'organization', attribute: 'overrides.minute', stored: '{"S":"5"}' },
      },
    ]);
    expect(s.counted).toEqual([{ name: INVALID_TENANCY_SETTING_METRIC, value: 1 }]);
    expect(INVALID_TENANCY_SETTING_METRIC).toBe('RequestsWithInvalidTenancySetting');
    expect(s.planReads).toEqual([]);
  });

  it('refuses an organization with an invalid setting even when its status reads inactive, and says so', async () => {
    const s = identify({ org: org({ planStatus: 'inactive', invalidSetting: { attribute: 'plan_status', stored: '{"S":"ACTIVE"}' } }) });
    await expect(s.result).rejects.toThrow(/its stored plan settings cannot be used/);
    expect(s.counted).toHaveLength(1);
  });

  it('refuses an organization that follows a plan whose item holds one, naming the plan item', async () => {
    const s = identify({ org: org({ overrides: { minute: 5 } }), plan: plan({ quotas: { minute: 1, hour: 0, day: 3, month: 4 }, invalidSetting: { attribute: 'quota_hour', stored: '{"N":"-1"}' } }) });
    await expect(s.result).rejects.toThrow(NoActivePlanError);
    expect(s.errors[0]?.extra).toEqual({ org_id: 'acme', plan: 'team', item: 'plan', attribute: 'quota_hour', stored: '{"N":"-1"}' });
    expect(s.counted).toEqual([{ name: INVALID_TENANCY_SETTING_METRIC, value: 1 }]);
    expect(s.planReads).toEqual(['team']);
  });

  it('does not read the plan of an organization that overrides every window, so its plan item is not acted on either way', async () => {
    const s = identify({ org: org({ overrides: { minute: 5, hour: 5, day: 5, month: 5 } }), plan: plan({ invalidSetting: { attribute: 'quota_hour', stored: '{"N":"-1"}' } }) });
    await expect(s.result).resolves.toMatchObject({ quotas: { minute: 5, hour: 5, day: 5, month: 5 } });
    expect(s.planReads).toEqual([]);
    expect(s.counted).toEqual([]);
  });

  it('logs and counts nothing for valid settings', async () => {
    const s = identify({ org: org(), plan: plan() });
    await expect(s.result).resolves.toMatchObject({ quotas: { minute: 1, hour: 2, day: 3, month: 4 } });
    expect(s.errors).toEqual([]);
    expect(s.counted).toEqual([]);
  });

  it('answers 403 no_active_plan through the handler for a quota stored as a string, and reserves nothing', async () => {
    const h = await createHarness({ plan: { minute: 10, hour: 10, day: 10, month: 10 } });
    const item = h.items.get('PLANS|PLAN#team')!;
    item.quota_minute = { S: '10' };
    const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify(buildBatch(1)) }));
    expect(response.statusCode).toBe(403);
    expect(body(response)).toMatchObject({ code: 'no_active_plan', detail: expect.stringMatching(/^Organization has no active plan/) });
    expect(ddbMock).not.toHaveReceivedCommand(TransactWriteItemsCommand);
  });
});
