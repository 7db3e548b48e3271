import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutRecordsCommand } from '@aws-sdk/client-kinesis';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { DynamoDbTenancyStore } from '../../../lambda/tenancy-store/dynamodb-tenancy-store.js';
import { decodeTraceRecord, type InlineTraceRecord } from '../../../lambda/shared/domain/trace-record.js';
import { createHarness, type Harness, kinesisMock, s3Mock } from '../../support/ingest-harness.js';
import { buildBatch, buildSpan, buildTrace, gatewayEvent, iso } from '../../../devkit/builders/trace-builders.js';

/**
 * A key can land data only under its own organization, and a workspace key only in its workspace:
 * a record's context (org_id, workspace_slug, api_key_id, request_id, received_at) is set by the
 * server from the key and the request, never from the body.
 */
const body = (r: APIGatewayProxyResult) => JSON.parse(r.body) as Record<string, unknown>;

let h: Harness;
beforeEach(async () => {
  h = await createHarness({ workspaces: ['research', 'support'] });
  // A second organization, "victim", with a workspace of its own and one sharing a slug with acme.
  const store = new DynamoDbTenancyStore(new DynamoDBClient({ region: 'us-east-1' }), 'tenancy');
  const now = iso();
  await store.putOrganization(
    { orgId: 'victim', plan: 'team', planStatus: 'active', billingStatus: 'ok', overrides: { minute: null, hour: null, day: null, month: null }, createdAt: now, updatedAt: now },
    { createOnly: true },
  );
  await store.putWorkspace({ orgId: 'victim', slug: 'vault', createdAt: now });
  await store.putWorkspace({ orgId: 'victim', slug: 'research', createdAt: now });
});

function published(): InlineTraceRecord[] {
  return kinesisMock
    .commandCalls(PutRecordsCommand)
    .flatMap((call) => call.args[0].input.Records ?? [])
    .map((entry) => decodeTraceRecord(entry.Data as Uint8Array) as InlineTraceRecord);
}

/** Members a hostile client might add to claim another tenant, at every level of the body. */
const CLAIMS = {
  org_id: 'victim',
  orgId: 'victim',
  organization: 'victim',
  api_key_id: 'key_victim',
  request_id: 'forged',
  record_id: 'forged/0',
  received_at: '1999-01-01T00:00:00.000000Z',
  context: { org_id: 'victim', workspace_slug: 'vault', api_key_id: 'key_victim' },
  v: 2,
  ref: { bucket: 'victim-bucket', key: 'org_id=victim/x' },
};

describe('tenant isolation', () => {
  it('org_id, context and other claims in the body are ignored: every record carries the key\'s organization', async () => {
    const traces = [buildTrace(CLAIMS), buildTrace({ ...CLAIMS, workspace_slug: 'support', spans: [buildSpan(CLAIMS)] })];
    const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify({ ...CLAIMS, traces }), requestId: 'req-real' }));
    expect(response.statusCode).toBe(200);
    const records = published();
    expect(records).toHaveLength(2);
    for (const record of records) {
      expect(record.context).toEqual({
        org_id: 'acme',
        workspace_slug: expect.any(String),
        api_key_id: expect.stringMatching(/^key_/),
        request_id: 'req-real',
        received_at: '2026-11-22T12:00:00.000000Z',
        record_id: expect.stringMatching(/^req-real\/[01]$/),
      });
      expect(record.context.api_key_id).not.toBe('key_victim');
      // Unknown members are dropped: none of the claims travels inside the trace either.
      const text = JSON.stringify(record);
      expect(text).not.toMatch(/victim|forged|1999-01-01/);
    }
    expect(records.map((r) => r.context.workspace_slug).sort()).toEqual(['', 'support']);
  });

  it('an organization key cannot target a workspace of another organization: 403, nothing published', async () => {
    const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify({ traces: [buildTrace({ workspace_slug: 'vault' })] }) }));
    expect(response.statusCode).toBe(403);
    expect(body(response)).toMatchObject({ code: 'workspace_out_of_scope' });
    expect(kinesisMock.commandCalls(PutRecordsCommand)).toHaveLength(0);
  });

  it('a slug both organizations have lands under the key\'s organization', async () => {
    expect((await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify({ traces: [buildTrace({ workspace_slug: 'research' })] }) }))).statusCode).toBe(200);
    expect(published().map((r) => r.context)).toEqual([expect.objectContaining({ org_id: 'acme', workspace_slug: 'research' })]);
  });

  it.each([
    ['another workspace of its organization', 'support'],
    ['a workspace of another organization', 'vault'],
    ['a slug differing only in case', 'Research'],
    ['a slug with a trailing space', 'research '],
    ['a slug with a NUL', 'research\u0000'],
  ])('a workspace key cannot target %s: 403, nothing published', async (_, slug) => {
    const traces = [buildTrace({ workspace_slug: 'research' }), buildTrace({ workspace_slug: slug, org_id: 'victim' })];
    const response = await h.invoke(gatewayEvent({ apiKey: h.workspaceKey, body: JSON.stringify({ traces }) }));
    expect(response.statusCode).toBe(403);
    expect(body(response).code).toBe('workspace_out_of_scope');
    expect(kinesisMock.commandCalls(PutRecordsCommand)).toHaveLength(0);
  });

  it('a workspace key lands only in its workspace, whatever else the body claims', async () => {
    const batch = buildBatch(3, { ...CLAIMS, workspace_slug: 'research' });
    const response = await h.invoke(gatewayEvent({ apiKey: h.workspaceKey, body: JSON.stringify({ ...CLAIMS, traces: batch.traces }) }));
    expect(response.statusCode).toBe(200);
    const records = published();
    expect(records).toHaveLength(3);
    for (const record of records) {
      expect(record.context).toMatchObject({ org_id: 'acme', workspace_slug: 'research' });
      expect(record.trace.workspace_slug).toBe('research');
    }
  });

  it('overflow objects of an oversized trace are written under the key\'s organization', async () => {
    const random = randomBytes(1_500_000).toString('base64');
    const trace = buildTrace({ ...CLAIMS, spans: [buildSpan({ ...CLAIMS, output: JSON.stringify(random) })] });
    const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify({ traces: [trace] }) }));
    expect(response.statusCode).toBe(200);
    expect(s3Mock.commandCalls(PutObjectCommand)).toHaveLength(1);
    for (const call of s3Mock.commandCalls(PutObjectCommand)) {
      expect(call.args[0].input.Key).toMatch(/^overflow\/org_id=acme\//);
    }
  });

  it('a revoked key or a key of an organization without a plan publishes nothing', async () => {
    const revoked = await h.invoke(gatewayEvent({ apiKey: h.revokedKey, body: JSON.stringify(buildBatch(1)) }));
    expect(revoked.statusCode).toBe(401);
    const inactive = await createHarness({ planStatus: 'inactive' });
    expect((await inactive.invoke(gatewayEvent({ apiKey: inactive.orgKey, body: JSON.stringify(buildBatch(1)) }))).statusCode).toBe(403);
    expect(kinesisMock.commandCalls(PutRecordsCommand)).toHaveLength(0);
  });
});
