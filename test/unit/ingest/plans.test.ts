import { TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyResult } from 'aws-lambda';
import 'aws-sdk-client-mock-jest';
import type { TenancyReader } from '../../../lambda/ingest/core/tenancy/ports.js';
import { identifyCaller } from '../../../lambda/ingest/core/tenancy/identify-caller.js';
import { CachedTenancyReader, DEFAULT_TENANCY_CACHE } from '../../../lambda/ingest/core/tenancy/tenancy-cache.js';
import { type ApiKey, generateApiKeySecret, type Organization, type Plan } from '../../../lambda/shared/domain/tenancy.js';
import { createHarness, ddbMock } from '../../support/ingest-harness.js';
import { buildBatch, gatewayEvent } from '../../../devkit/builders/trace-builders.js';

const body = (response: APIGatewayProxyResult) => JSON.parse(response.body) as Record<string, unknown>;
const TEAM = { minute: 2, hour: 1000, day: 10_000, month: 100_000 };

describe('an organization on a plan (docs/api.md, "Plans and quotas")', () => {
  it('runs under its plan\'s quotas when it overrides none', async () => {
    const h = await createHarness({ plan: TEAM });
    const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify(buildBatch(3)) }));
    expect(response.statusCode).toBe(429);
    expect(body(response)).toMatchObject({ window: 'minute', limit: 2 });
  });

  it('uses its override of one window and the plan for the others', async () => {
    const h = await createHarness({ plan: TEAM, quotas: { minute: 5 } });
    const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify(buildBatch(3)) }));
    expect(response.statusCode).toBe(200);
    const rooms = ddbMock.commandCalls(TransactWriteItemsCommand)[0]?.args[0].input.TransactItems?.flatMap((item) => item.Update?.ExpressionAttributeValues?.[':room']?.N ?? []);
    expect(rooms).toEqual([String(5 - 3), String(1000 - 3), String(10_000 - 3), String(100_000 - 3)]);
  });

  it('answers 403 no_active_plan when its plan does not exist, and touches no counter', async () => {
    const h = await createHarness({ plan: 'missing' });
    const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify(buildBatch(1)) }));
    expect(response.statusCode).toBe(403);
    expect(body(response)).toMatchObject({ code: 'no_active_plan', detail: expect.stringMatching(/^Organization has no active plan: its plan 'team' does not exist/) });
    expect(ddbMock).not.toHaveReceivedCommand(TransactWriteItemsCommand);
  });

  it('needs no plan record when every window is overridden (an organization from before plans)', async () => {
    const h = await createHarness({ plan: 'missing', quotas: { minute: 10, hour: null, day: null, month: null } });
    expect((await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify(buildBatch(3)) }))).statusCode).toBe(200);
  });
});

describe('a plan change', () => {
  it('reaches every organization on the plan within the tenancy cache delay, and not before', async () => {
    const secret = generateApiKeySecret();
    const keyOf = (orgId: string): ApiKey => ({ keyId: `key-${orgId}`, orgId, workspaceSlug: null, status: 'active', name: '', displayPrefix: '', createdAt: '' });
    const orgOf = (orgId: string): Organization => ({ orgId, plan: 'team', overrides: {}, planStatus: 'active', billingStatus: 'ok', createdAt: '', updatedAt: '' });
    let plan: Plan = { name: 'team', quotas: TEAM, createdAt: '', updatedAt: '' };
    let keyFor = 'a';
    const store: TenancyReader = {
      getApiKeyByHash: async () => keyOf(keyFor),
      getOrganization: async (orgId) => orgOf(orgId),
      getPlan: async () => plan,
      workspaceExists: async () => true,
    };
    let now = 0;
    const cached = new CachedTenancyReader(store, DEFAULT_TENANCY_CACHE, () => now);
    const quotasOf = async (orgId: string) => {
      keyFor = orgId;
      return (await identifyCaller({ tenancy: cached, logger: { warn: () => undefined, error: () => undefined } }, [secret.secret])).quotas.minute;
    };
    expect(await quotasOf('a')).toBe(2);
    expect(await quotasOf('b')).toBe(2);

    plan = { ...plan, quotas: { ...TEAM, minute: 50 } };
    now = DEFAULT_TENANCY_CACHE.ttlMs - 1;
    expect(await quotasOf('a')).toBe(2);
    now = DEFAULT_TENANCY_CACHE.ttlMs;
    expect(await quotasOf('a')).toBe(50);
    expect(await quotasOf('b')).toBe(50);
  });
});
