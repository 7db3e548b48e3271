import { randomUUID } from 'node:crypto';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { composeIngest } from '../../lambda/ingest/compose.js';
import { decodeTraceRecord } from '../../lambda/shared/domain/trace-record.js';
import { startKinesalite } from '../../devkit/engines/engines.js';
import { createStream, localClientConfig } from '../../devkit/engines/provision.js';
import { awayFromMinuteEdge, provisionOrg, readStream, windowCount } from '../../devkit/engines/engine-fixtures.js';
import { useEngineSuite } from '../support/engine-suite.js';
import { quietTelemetry } from '../../devkit/fakes/quiet-telemetry.js';
import { gatewayEvent, lambdaContext, liveBatch } from '../../devkit/builders/trace-builders.js';

/**
 * Faults the real engines can produce: a stream that does not exist, a Kinesis endpoint that went
 * away, DynamoDB Local refusing a key, transaction conflicts under real concurrency. Invariants as in
 * the unit fault tests: 200 = on the stream and counted once; 503 = Retry-After and counters as before.
 */
describe('faults against DynamoDB Local and kinesalite', () => {
  const tables = { tenancy: 'tenancy', rate: 'rate' };
  // Each test creates the streams it needs.
  const engines = useEngineSuite({ tables, stream: { name: null } });
  // Each test reads the minute window after its requests.
  beforeEach(() => awayFromMinuteEdge());

  function handlerWith(kinesisClient: KinesisClient, stream: string, rateAttempts = 5) {
    const handler = composeIngest({
      resources: { tenancyTable: tables.tenancy, rateTable: tables.rate, traceStream: stream },
      clients: { dynamodb: engines.dynamodb, kinesis: kinesisClient },
      ports: { tenancy: engines.tenancy, overflow: { put: async () => Promise.reject(new Error('no overflow expected')), delete: async () => undefined } },
      idempotency: false,
      retries: { rateWindows: { maxAttempts: rateAttempts, baseDelayMs: 5, maxDelayMs: 40 }, publish: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20 } },
      ...quietTelemetry('it'),
    });
    return (apiKey: string, payload: unknown) =>
      handler(gatewayEvent({ apiKey, body: JSON.stringify(payload) }), lambdaContext) as Promise<APIGatewayProxyResult>;
  }

  async function streamTraceIds(stream: string): Promise<string[]> {
    const shards = await readStream(engines.kinesis, stream);
    return shards.flatMap((shard) =>
      shard.records.map((record) => {
        const decoded = decodeTraceRecord(record.data);
        return 'trace' in decoded ? decoded.trace.trace_id : decoded.ref.trace_id;
      }),
    );
  }

  const fresh = (n: number) => liveBatch(n, {}, 1);

  it('a stream that does not exist (ResourceNotFound): 503 + Retry-After, increments given back', async () => {
    const { orgId, apiKey } = await provisionOrg(engines.tenancy, { quotas: { minute: 100_000, month: 1_000_000 }, workspaces: ['research'] });
    const response = await handlerWith(engines.kinesis, `missing-${randomUUID().slice(0, 8)}`)(apiKey, fresh(3));
    expect(response.statusCode).toBe(503);
    expect(Number(response.headers?.['Retry-After'])).toBeGreaterThan(0);
    expect(await windowCount(engines.dynamodb, tables.rate, orgId, 'minute')).toBe(0);
  });

  it('a Kinesis endpoint that went away: 503 + Retry-After; increments given back unless a request may have reached it', async () => {
    const { orgId, apiKey } = await provisionOrg(engines.tenancy, { quotas: { minute: 100_000, month: 1_000_000 }, workspaces: ['research'] });
    const doomed = await startKinesalite();
    const client = new KinesisClient({ ...localClientConfig(doomed.endpoint), maxAttempts: 1 });
    // Stopped whatever the assertions say: a kinesalite left listening keeps jest from exiting.
    try {
      await createStream(client, 'traces', 1);
      const post = handlerWith(client, 'traces');
      expect((await post(apiKey, fresh(2))).statusCode).toBe(200);
      expect(await windowCount(engines.dynamodb, tables.rate, orgId, 'minute')).toBe(2);
      await doomed.stop();
      const response = await post(apiKey, fresh(3));
      expect(response.statusCode).toBe(503);
      // The open HTTP/2 session dies with the engine: a request cut off on it may have been written,
      // so the answer says so and the 3 stay counted; refused connections alone give them back.
      const mayHaveBeenAccepted = (JSON.parse(response.body) as { may_have_been_accepted?: boolean }).may_have_been_accepted === true;
      expect(await windowCount(engines.dynamodb, tables.rate, orgId, 'minute')).toBe(mayHaveBeenAccepted ? 5 : 2);
    } finally {
      client.destroy();
      await doomed.stop();
    }
  });

  it('60 concurrent batches on one hot organization: every 200 is on the stream and counted once, any 503 neither', async () => {
    const { orgId, apiKey } = await provisionOrg(engines.tenancy, { quotas: { minute: 100_000, month: 1_000_000 }, workspaces: ['research'] });
    const stream = `hot-${randomUUID().slice(0, 8)}`;
    await createStream(engines.kinesis, stream, 2);
    // Two attempts only, so a conflict storm would outlast the retries (DynamoDB Local mostly serialises them).
    const post = handlerWith(engines.kinesis, stream, 2);
    const batches = Array.from({ length: 60 }, () => fresh(1));
    const responses = await Promise.all(batches.map((batch) => post(apiKey, batch)));
    const statuses = responses.map((r) => r.statusCode);
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    const accepted = batches.filter((_, i) => statuses[i] === 200).map((b) => String(b.traces[0]?.trace_id));
    expect(await windowCount(engines.dynamodb, tables.rate, orgId, 'minute')).toBe(accepted.length);
    expect((await streamTraceIds(stream)).sort()).toEqual(accepted.sort());
  });

  it('an organization key naming a 1,024-character workspace_slug gets 403, not a 503 from DynamoDB\'s key limit', async () => {
    // The schema allows 1,024 characters; the workspace lookup's sort key `WS#<slug>` then exceeds
    // DynamoDB's 1,024-byte sort-key limit and GetItem fails with a ValidationException, which the
    // handler answers 503 (retry) although no retry can ever succeed.
    const { apiKey } = await provisionOrg(engines.tenancy, { quotas: { minute: 100_000, month: 1_000_000 }, workspaces: ['research'] });
    const response = await handlerWith(engines.kinesis, 'unused')(apiKey, liveBatch(1, { workspace_slug: 's'.repeat(1024) }, 1));
    expect(response.statusCode).toBe(403);
  });
});
