import type { APIGatewayProxyResult } from 'aws-lambda';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { composeIngest, defaultIngestClients } from '../../lambda/ingest/compose.js';
import type { StreamRecord, TraceSink } from '../../lambda/ingest/core/publish/ports.js';
import { DynamoDbRateLimiter } from '../../lambda/ingest/adapters/rate/dynamodb-rate-limiter.js';
import { generateApiKeySecret } from '../../lambda/shared/domain/tenancy.js';
import { rateKeys } from '../../lambda/shared/tables.js';
import { startDynamoProxy } from '../../devkit/dynamo/proxy.js';
import { localClientConfig } from '../../devkit/engines/provision.js';
import { provisionOrg } from '../../devkit/engines/engine-fixtures.js';
import { useEngineSuite } from '../support/engine-suite.js';
import { quietTelemetry } from '../../devkit/fakes/quiet-telemetry.js';
import { gatewayEvent, lambdaContext, liveBatch } from '../../devkit/builders/trace-builders.js';

/** Idempotency-Key against DynamoDB Local, whose conditional writes are the real ones. */
describe('Idempotency-Key', () => {
  const tables = { tenancy: 'tenancy', rate: 'rate' };
  const engines = useEngineSuite({ tables });

  const newOrgKey = async () => (await provisionOrg(engines.tenancy, { quotas: { minute: 1000 } })).apiKey;

  function setup(sink?: TraceSink) {
    const published: StreamRecord[] = [];
    let reserves = 0;
    const limiter = new DynamoDbRateLimiter(engines.dynamodb, tables.rate);
    const handler = composeIngest({
      resources: { rateTable: tables.rate },
      clients: { dynamodb: engines.dynamodb },
      ports: {
        tenancy: engines.tenancy,
        rateLimiter: { reserve: (...args) => ((reserves += 1), limiter.reserve(...args)), release: (...args) => limiter.release(...args) },
        sink: sink ?? {
          publish: async (records) => {
            // Slow enough that concurrent duplicates overlap with the first.
            await new Promise((resolve) => setTimeout(resolve, 50));
            published.push(...records);
          },
        },
        overflow: { put: async () => Promise.reject(new Error('unused')), delete: async () => undefined },
      },
      ...quietTelemetry('it'),
    });
    const post = (apiKey: string, body: unknown, key?: string, extra: Record<string, string> = {}) =>
      handler(
        gatewayEvent({ apiKey, body: JSON.stringify(body), headers: { ...(key ? { 'Idempotency-Key': key } : {}), ...extra } }),
        lambdaContext,
      ) as Promise<APIGatewayProxyResult>;
    return { post, published, reserves: () => reserves };
  }

  it('answers a repeat with the first response, without counting or publishing again', async () => {
    const apiKey = await newOrgKey();
    const { post, published, reserves } = setup();
    const batch = liveBatch(3);
    const first = await post(apiKey, batch, 'retry-1');
    const second = await post(apiKey, batch, 'retry-1');
    expect(first.statusCode).toBe(200);
    expect(second.statusCode).toBe(200);
    expect(second.body).toBe(first.body);
    expect(second.headers?.['Idempotent-Replayed']).toBe('true');
    expect(published).toHaveLength(3);
    expect(reserves()).toBe(1);
  });

  it('answers 422 when the key comes back with a different body', async () => {
    const apiKey = await newOrgKey();
    const { post } = setup();
    expect((await post(apiKey, liveBatch(1), 'k-422')).statusCode).toBe(200);
    const reused = await post(apiKey, liveBatch(1), 'k-422');
    expect(reused.statusCode).toBe(422);
    expect(JSON.parse(reused.body)).toMatchObject({ code: 'idempotency_key_reused', detail: expect.stringMatching(/different body/) });
  });

  it('lets exactly one of concurrent duplicates publish', async () => {
    const apiKey = await newOrgKey();
    const { post, published } = setup();
    const batch = liveBatch(2);
    const responses = await Promise.all(Array.from({ length: 10 }, () => post(apiKey, batch, 'burst')));
    const statuses = responses.map((r) => r.statusCode);
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
    expect(published).toHaveLength(2);
    const conflict = responses.find((r) => r.statusCode === 409);
    if (conflict) expect(conflict.headers?.['Retry-After']).toBe('1');
  });

  it('frees the key when the first attempt is refused, so the retry is processed', async () => {
    const apiKey = await newOrgKey();
    const failing = setup({ publish: async () => Promise.reject(new Error('stream down')) });
    const batch = liveBatch(2);
    expect((await failing.post(apiKey, batch, 'after-503')).statusCode).toBe(503);
    const healthy = setup();
    const retry = await healthy.post(apiKey, batch, 'after-503');
    expect(retry.statusCode).toBe(200);
    expect(retry.headers?.['Idempotent-Replayed']).toBeUndefined();
    expect(healthy.published).toHaveLength(2);
  });

  it('keeps keys apart per organization', async () => {
    const [a, b] = [await newOrgKey(), await newOrgKey()];
    const { post, published } = setup();
    expect((await post(a, liveBatch(1), 'shared')).statusCode).toBe(200);
    expect((await post(b, liveBatch(1), 'shared')).statusCode).toBe(200);
    expect(published).toHaveLength(2);
  });

  it('recognises its own claim when the claim PutItem answers after the client timeout and the SDK retries it', async () => {
    const { apiKey, orgId } = await provisionOrg(engines.tenancy, { quotas: { minute: 1000 } });
    // The first IDEM# PutItem is carried out at once but answered 2.6 s later, past the deployed 2 s timeout.
    let delayed = 0;
    const proxy = await startDynamoProxy(engines.endpoints.dynamodb!, {}, {
      answerDelayMs: (operation, input) => {
        const pk = (input.Item as { pk?: { S?: string } } | undefined)?.pk?.S ?? '';
        return operation === 'PutItem' && pk.startsWith('IDEM#') && delayed++ === 0 ? 2_600 : 0;
      },
    });
    const { dynamodb } = defaultIngestClients(false, localClientConfig(proxy.endpoint));
    try {
      const published: StreamRecord[] = [];
      const handler = composeIngest({
        resources: { rateTable: tables.rate },
        clients: { dynamodb },
        ports: {
          tenancy: engines.tenancy,
          rateLimiter: new DynamoDbRateLimiter(engines.dynamodb, tables.rate),
          sink: { publish: async (records) => void published.push(...records) },
          overflow: { put: async () => Promise.reject(new Error('unused')), delete: async () => undefined },
        },
        ...quietTelemetry('it'),
      });
      const batch = JSON.stringify(liveBatch(3));
      const post = () => handler(gatewayEvent({ apiKey, body: batch, headers: { 'Idempotency-Key': 'slow-claim' } }), lambdaContext) as Promise<APIGatewayProxyResult>;

      const first = await post();

      expect(delayed).toBeGreaterThanOrEqual(2);
      expect({ status: first.statusCode, replayed: first.headers?.['Idempotent-Replayed'] }).toEqual({ status: 200, replayed: undefined });
      expect(published).toHaveLength(3);
      const { pk, sk } = rateKeys.idempotency(orgId, 'slow-claim');
      const { Item } = await engines.dynamodb.send(new GetItemCommand({ TableName: tables.rate, Key: { pk: { S: pk }, sk: { S: sk } }, ConsistentRead: true }));
      expect(Item?.state?.S).toBe('completed');
      const resend = await post();
      expect({ status: resend.statusCode, replayed: resend.headers?.['Idempotent-Replayed'], body: resend.body }).toEqual({ status: 200, replayed: 'true', body: first.body });
      expect(published).toHaveLength(3);
    } finally {
      dynamodb.destroy();
      await proxy.stop();
    }
  });

  it('puts a replay through the workspace check of a first request: a key of another workspace gets 403, not the first answer', async () => {
    const { apiKey, orgId } = await provisionOrg(engines.tenancy, { workspaces: ['default', 'ws2'] });
    const secret = generateApiKeySecret();
    const now = new Date().toISOString();
    await engines.tenancy.putApiKey({ keyId: secret.keyId, orgId, workspaceSlug: 'ws2', status: 'active', name: 'ws2', displayPrefix: secret.displayPrefix, createdAt: now }, secret.secretHash);
    const { post, published } = setup();
    const batch = liveBatch(2, { workspace_slug: 'default' });
    expect((await post(apiKey, batch, 'scoped')).statusCode).toBe(200);

    const replay = await post(secret.secret, batch, 'scoped');

    expect({ status: replay.statusCode, code: JSON.parse(replay.body).code, replayed: replay.headers?.['Idempotent-Replayed'] }).toEqual({ status: 403, code: 'workspace_out_of_scope', replayed: undefined });
    expect((await post(secret.secret, batch)).statusCode).toBe(403);
    expect((await post(apiKey, batch, 'scoped')).headers?.['Idempotent-Replayed']).toBe('true');
    expect(published).toHaveLength(2);
  });

  it.each([['has space'], ['x'.repeat(256)], ['é']])('answers 400 for the malformed key %p', async (key) => {
    const apiKey = await newOrgKey();
    const response = await setup().post(apiKey, liveBatch(1), key);
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body).code).toBe('invalid_idempotency_key');
  });
});
