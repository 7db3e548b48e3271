import { randomUUID } from 'node:crypto';
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { generateApiKeySecret } from '../../lambda/shared/domain/tenancy.js';
import { tenancyKeys } from '../../lambda/shared/tables.js';
import { createPlan, migrateOrganizations, updateOrganization, updatePlan } from '../../scripts/admin/commands.js';
import { awayFromMinuteEdge } from '../../devkit/engines/engine-fixtures.js';
import { useEngineSuite } from '../support/engine-suite.js';
import { rateWindowsOnlyIngest } from '../../devkit/fakes/fake-tenancy.js';
import { gatewayEvent, lambdaContext, liveBatch } from '../../devkit/builders/trace-builders.js';

// Plans as records on DynamoDB Local: an organization written before plans keeps its quotas, the
// migration rewrites it in place, and a plan change reaches ingest (the tenancy cache off here).

const tables = { tenancy: 'plans-tenancy', rate: 'plans-rate' };

describe('plans and the migration of organizations from before plans', () => {
  const engines = useEngineSuite({ tables });
  const orgId = `legacy-${randomUUID().slice(0, 8)}`;
  const secret = generateApiKeySecret();
  const admin = () => ({ store: engines.tenancy, now: () => new Date() });
  const send = async (traces: number) => {
    const handler = rateWindowsOnlyIngest({ dynamodb: engines.dynamodb, rateTable: tables.rate, tenancy: engines.tenancy, rateLeases: false, serviceName: 'it' });
    return (await handler(gatewayEvent({ apiKey: secret.secret, body: JSON.stringify(liveBatch(traces)), requestId: randomUUID() }), lambdaContext)) as APIGatewayProxyResult;
  };

  beforeAll(async () => {
    await awayFromMinuteEdge(30_000);
    // The item exactly as the admin CLI wrote it before plans were records: four quota attributes (month unlimited), a plan name only.
    const now = new Date().toISOString();
    await engines.dynamodb.send(
      new PutItemCommand({
        TableName: tables.tenancy,
        Item: {
          pk: { S: `ORG#${orgId}` },
          sk: { S: 'ORG' },
          org_id: { S: orgId },
          plan: { S: 'team' },
          plan_status: { S: 'active' },
          billing_status: { S: 'ok' },
          quota_minute: { N: '3' },
          quota_hour: { N: '1000' },
          quota_day: { N: '10000' },
          created_at: { S: now },
          updated_at: { S: now },
        },
      }),
    );
    await engines.tenancy.putApiKey({ keyId: secret.keyId, orgId, workspaceSlug: null, status: 'active', name: 'it', displayPrefix: secret.displayPrefix, createdAt: now }, secret.secretHash);
  });

  it('ingests for a legacy organization under its own four numbers, with no plan record', async () => {
    expect((await send(4)).statusCode).toBe(429);
    const accepted = await send(2);
    expect(accepted.statusCode).toBe(200);
    expect(accepted.headers?.['RateLimit-Policy']).toBe('"per-minute";q=3;w=60, "per-hour";q=1000;w=3600, "per-day";q=10000;w=86400');
    expect(accepted.headers?.RateLimit).toMatch(/^"per-minute";r=1;t=\d+, "per-hour";r=998;t=\d+, "per-day";r=9998;t=\d+$/);
  });

  it('migrates it in place: the four numbers become overrides, the quota attributes go, a second run finds nothing', async () => {
    const dry = await migrateOrganizations(admin(), { dryRun: true });
    expect(dry.organizations.find((org) => org.org_id === orgId)).toMatchObject({ migrated: false, quotas: { minute: 3, hour: 1000, day: 10_000, month: null } });

    const done = await migrateOrganizations(admin(), { dryRun: false });
    expect(done.organizations.find((org) => org.org_id === orgId)).toMatchObject({ migrated: true });
    const { Item } = await engines.dynamodb.send(new GetItemCommand({ TableName: tables.tenancy, Key: { pk: { S: tenancyKeys.organization(orgId).pk }, sk: { S: 'ORG' } } }));
    expect(Item?.overrides).toEqual({ M: { minute: { N: '3' }, hour: { N: '1000' }, day: { N: '10000' }, month: { NULL: true } } });
    expect(Object.keys(Item ?? {}).filter((name) => name.startsWith('quota_'))).toEqual([]);
    expect((await migrateOrganizations(admin(), { dryRun: false })).organizations.map((org) => org.org_id)).not.toContain(orgId);

    // Same quotas after the migration: the minute still has 1 left.
    expect((await send(2)).statusCode).toBe(429);
    expect((await send(1)).statusCode).toBe(200);
  });

  it('moves it onto its plan by dropping overrides, and follows a plan change', async () => {
    await createPlan(admin(), 'team', { minute: 10, hour: 1000, day: 10_000, month: null });
    await updateOrganization(admin(), orgId, { overrides: { minute: 'plan', hour: 'plan', day: 'plan', month: 'plan' } });
    expect((await send(5)).statusCode).toBe(200); // 3 used + 5 ≤ 10
    await updatePlan(admin(), 'team', { minute: 9 });
    expect((await send(2)).statusCode).toBe(429); // 8 used + 2 > 9
    const response = await send(1);
    expect(response.statusCode).toBe(200);
    expect(response.headers?.['RateLimit-Policy']).toMatch(/^"per-minute";q=9;w=60, /);
  });
});
