import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { composeIngest } from '../../../lambda/ingest/compose.js';
import { fakeTenancy } from '../../../devkit/fakes/fake-tenancy.js';
import { gatewayEvent, lambdaContext, liveBatch } from '../../../devkit/builders/trace-builders.js';

/** The ingest handler over fakes, with a logger whose `info` lines the test reads. */
function handlerLoggingTo(orgId: string) {
  const { apiKey, tenancy } = fakeTenancy(orgId, { minute: 1, hour: null, day: null, month: null });
  const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
  const info = jest.spyOn(logger, 'info');
  const handler = composeIngest({
    ports: { tenancy, rateLimiter: { reserve: async () => ({ allowed: true }), release: async () => undefined }, sink: { publish: async () => undefined }, overflow: { put: async (k: string) => ({ bucket: 'b', key: k }), delete: async () => undefined } },
    idempotency: false,
    logger,
    metrics: new Metrics({ namespace: 'Test', serviceName: 'test' }),
  });
  return { apiKey, info, send: async (key: string, body: unknown) => (await handler(gatewayEvent({ apiKey: key, body: JSON.stringify(body) }), lambdaContext)) as APIGatewayProxyResult };
}

describe('the log line of a refusal', () => {
  it('names the organization once the key identified it, so an operator can tell who is refused', async () => {
    const { apiKey, info, send } = handlerLoggingTo('acme');
    expect((await send(apiKey, liveBatch(2))).statusCode).toBe(429);
    expect(info).toHaveBeenCalledWith('Request refused', { status: 429, code: 'batch_exceeds_quota', org_id: 'acme' });
  });

  it('has no organization for a request whose key identified none', async () => {
    const { info, send } = handlerLoggingTo('acme');
    expect((await send('not-a-key', liveBatch(1))).statusCode).toBe(401);
    expect(info).toHaveBeenCalledWith('Request refused', { status: 401, code: 'invalid_api_key' });
  });
});
