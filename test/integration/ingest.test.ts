import type { APIGatewayProxyResult } from 'aws-lambda';
import { composeIngest } from '../../lambda/ingest/compose.js';
import type { TraceSink } from '../../lambda/ingest/core/publish/ports.js';
import { KinesisTraceSink } from '../../lambda/ingest/adapters/publish/kinesis-trace-sink.js';
import { decodeTraceRecord, type InlineTraceRecord } from '../../lambda/shared/domain/trace-record.js';
import { awayFromMinuteEdge, provisionOrg, readStream, windowCount } from '../../devkit/engines/engine-fixtures.js';
import { useEngineSuite } from '../support/engine-suite.js';
import { quietTelemetry } from '../../devkit/fakes/quiet-telemetry.js';
import { gatewayEvent, lambdaContext, liveBatch, liveTrace } from '../../devkit/builders/trace-builders.js';

/**
 * The ingest handler against real engines: DynamoDB Local (the official jar) and kinesalite.
 * The clock is the real one here, so traces are stamped "now".
 */
describe('ingest against DynamoDB Local and kinesalite', () => {
  const tables = { tenancy: 'tenancy', rate: 'rate' };
  const stream = 'traces';
  const engines = useEngineSuite({ tables, stream: { name: stream, shards: 2 } });
  // Each test reads the minute window after its requests.
  beforeEach(() => awayFromMinuteEdge());

  function handlerWith(sink: TraceSink = new KinesisTraceSink(engines.kinesis, stream)) {
    const handler = composeIngest({
      resources: { rateTable: tables.rate },
      clients: { dynamodb: engines.dynamodb },
      ports: { tenancy: engines.tenancy, sink, overflow: { put: async () => Promise.reject(new Error('no overflow expected')), delete: async () => undefined } },
      idempotency: false,
      retries: { rateWindows: { maxAttempts: 8, baseDelayMs: 10, maxDelayMs: 200 } },
      ...quietTelemetry('it'),
    });
    return (apiKey: string, payload: unknown) =>
      handler(gatewayEvent({ apiKey, body: JSON.stringify(payload) }), lambdaContext) as Promise<APIGatewayProxyResult>;
  }

  async function readStreamRecords(): Promise<InlineTraceRecord[]> {
    const shards = await readStream(engines.kinesis, stream);
    return shards.flatMap((shard) => shard.records.map((r) => decodeTraceRecord(r.data) as InlineTraceRecord));
  }

  it('reaches a quota exactly and never exceeds it when 50 batches race for one organization', async () => {
    // Must finish within one minute window; the test is retried by nobody, so keep it short.
    const { orgId, apiKey } = await provisionOrg(engines.tenancy, { quotas: { minute: 90, hour: 1000 } });
    const post = handlerWith();
    const statuses: number[] = [];
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        const batch = liveBatch(3, {}, 1);
        // A 503 means nothing was accepted: the client resends, as the contract tells it to.
        for (let attempt = 0; attempt < 10; attempt++) {
          const response = await post(apiKey, batch);
          if (response.statusCode !== 503) {
            statuses.push(response.statusCode);
            return;
          }
        }
      }),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(30);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    expect(await windowCount(engines.dynamodb, tables.rate, orgId, 'minute')).toBe(90);
  });

  it('is atomic: a full month window refuses the batch and moves no counter', async () => {
    const { orgId, apiKey } = await provisionOrg(engines.tenancy, { quotas: { minute: 1000, month: 5 } });
    const post = handlerWith();
    expect((await post(apiKey, liveBatch(5))).statusCode).toBe(200);
    expect(await windowCount(engines.dynamodb, tables.rate, orgId, 'minute')).toBe(5);
    const refused = await post(apiKey, liveBatch(1));
    expect(refused.statusCode).toBe(429);
    expect(refused.headers?.['Retry-After']).toBe('86400');
    expect(JSON.parse(refused.body)).toMatchObject({ window: 'month', limit: 5 });
    expect(await windowCount(engines.dynamodb, tables.rate, orgId, 'minute')).toBe(5);
    expect(await windowCount(engines.dynamodb, tables.rate, orgId, 'month')).toBe(5);
  });

  it('says in the 429 what is used, what is left and what the batch needs (3 of 5 used, a batch of 3)', async () => {
    const { apiKey } = await provisionOrg(engines.tenancy, { quotas: { minute: 5, hour: 1000 } });
    const post = handlerWith();
    expect((await post(apiKey, liveBatch(3))).statusCode).toBe(200);
    const refused = await post(apiKey, liveBatch(3));
    expect(refused.statusCode).toBe(429);
    const body = JSON.parse(refused.body) as Record<string, unknown>;
    expect(body).toMatchObject({ window: 'minute', limit: 5, used: 3, remaining: 2, requested: 3 });
    // The minute's reset depends on when the test runs; RateLimit's t says it, and the detail must say the same.
    const reset = /"per-minute";r=\d+;t=(\d+)/.exec(String(refused.headers?.RateLimit))?.[1];
    expect(body.detail).toBe(
      'Rate limit exceeded: the per-minute quota is 5 traces; 3 are used and 2 left, and this batch needs 3. ' +
        'Retry after the Retry-After interval, or send at most 2 traces now. ' +
        `Retry-After is 60 s on every per-minute refusal, as the API contract fixes it; the window itself resets in ${reset} s (t in RateLimit)`,
    );
  });

  it('gives the increments back when publishing fails', async () => {
    const { orgId, apiKey } = await provisionOrg(engines.tenancy, { quotas: { minute: 100, month: 100 } });
    expect((await handlerWith()(apiKey, liveBatch(2))).statusCode).toBe(200);
    const failing = handlerWith({ publish: async () => Promise.reject(new Error('stream down')) });
    expect((await failing(apiKey, liveBatch(7))).statusCode).toBe(503);
    expect(await windowCount(engines.dynamodb, tables.rate, orgId, 'minute')).toBe(2);
    expect(await windowCount(engines.dynamodb, tables.rate, orgId, 'month')).toBe(2);
  });

  it('puts records on the stream that decode back to exactly the accepted traces with their context', async () => {
    const { orgId, apiKey } = await provisionOrg(engines.tenancy);
    const traces = [liveTrace(), { nonsense: true }, liveTrace({ trace_id: null })];
    const response = await handlerWith()(apiKey, { traces });
    expect(JSON.parse(response.body)).toMatchObject({ accepted: 2, rejected: 1 });
    const mine = (await readStreamRecords()).filter((r) => r.context.org_id === orgId);
    expect(mine).toHaveLength(2);
    const sent = traces[0] as Record<string, unknown>;
    const landed = mine.find((r) => r.trace.trace_id === sent.trace_id);
    expect(landed?.trace).toMatchObject({
      environment: sent.environment,
      input_tokens: sent.input_tokens,
      attributes: sent.attributes,
      spans: (sent.spans as Record<string, unknown>[]).map((span) => expect.objectContaining({ span_id: span.span_id, input: span.input, output: span.output, name: span.name })),
    });
    expect(landed?.context).toEqual({
      org_id: orgId,
      workspace_slug: '',
      api_key_id: expect.stringMatching(/^key_/),
      request_id: expect.any(String),
      received_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
      record_id: `${landed?.context.request_id}/0`,
    });
  });
});
