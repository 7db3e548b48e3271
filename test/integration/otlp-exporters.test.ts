import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { ExportResultCode } from '@opentelemetry/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { composeIngest } from '../../lambda/ingest/compose.js';
import type { TraceSink } from '../../lambda/ingest/core/publish/ports.js';
import { composeLanding } from '../../lambda/landing/compose.js';
import { KinesisTraceSink } from '../../lambda/ingest/adapters/publish/kinesis-trace-sink.js';
import { DependencyUnavailableError } from '../../lambda/shared/domain/errors.js';
import { decodeTraceRecord } from '../../lambda/shared/domain/trace-record.js';
import { type HttpGateway, startHttpGateway } from '../../devkit/local-stack/http-gateway.js';
import { awayFromMinuteEdge, provisionOrg, readStream } from '../../devkit/engines/engine-fixtures.js';
import { useEngineSuite } from '../support/engine-suite.js';
import { quietTelemetry } from '../../devkit/fakes/quiet-telemetry.js';
import { lambdaContext } from '../../devkit/builders/trace-builders.js';
import { kinesisEvent } from '../../devkit/builders/landing-builders.js';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
const CLIENT = path.join(ROOT, 'devkit/clients/otlp-export-client.ts');

/**
 * The official OpenTelemetry JS exporters (http/protobuf and http/json) pointed at the local
 * gateway, with the ingest function on DynamoDB Local, kinesalite and s3rver; the landing function
 * consumes the stream and DuckDB reads the Parquet back.
 */
describe('OpenTelemetry SDK exporters → POST /otel/v1/traces → Parquet', () => {
  const tables = { tenancy: 'tenancy', rate: 'rate' };
  const stream = 'traces';
  const bucket = 'data';
  const engines = useEngineSuite({ tables, stream: { name: stream }, bucket, duckdb: true });
  const { query } = engines;
  let gateway: HttpGateway;
  const otlpRequests: number[] = [];
  let failNextPublish = false;

  beforeAll(async () => {
    const kinesisSink = new KinesisTraceSink(engines.kinesis, stream);
    // Kinesis down for exactly one request: the 503 an exporter must retry.
    const sink: TraceSink = {
      publish: async (records) => {
        if (failNextPublish) {
          failNextPublish = false;
          throw new DependencyUnavailableError('Kinesis', 'Kinesis is down for this test');
        }
        return kinesisSink.publish(records);
      },
    };
    const handler = composeIngest({
      resources: { tenancyTable: tables.tenancy, rateTable: tables.rate, traceStream: stream, dataBucket: bucket },
      clients: { dynamodb: engines.dynamodb, kinesis: engines.kinesis, s3: engines.s3 },
      ports: { sink },
      tenancyCache: false,
      ...quietTelemetry('otlp-it'),
    });
    gateway = await startHttpGateway({
      port: 0,
      handler: (event: APIGatewayProxyEvent) => {
        if (event.path === '/otel/v1/traces') otlpRequests.push(Date.now());
        return handler(event, lambdaContext) as Promise<APIGatewayProxyResult>;
      },
    });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  /** Runs the official exporter in its own process, as a user's application would. */
  async function exportFrom(protocol: 'proto' | 'json', apiKey: string, agentName: string, options: { timeoutMs?: number; gzip?: boolean } = {}) {
    const args = [CLIENT, protocol, `${gateway.url}/otel/v1/traces`, apiKey, agentName, String(options.timeoutMs ?? 10_000), options.gzip ? 'gzip' : ''];
    const { stdout } = await run(TSX, args, { cwd: ROOT });
    return JSON.parse(stdout) as { code: number; error: string | null; traceId: string };
  }

  async function landAndRead(): Promise<{ traces: string; spans: string }> {
    const land = composeLanding({ dataBucket: bucket, s3: engines.s3, ...quietTelemetry('otlp-landing') });
    for (const records of await engines.readShards()) {
      if (records.length > 0) await land(kinesisEvent(records));
    }
    const { dir } = await engines.downloadBucket();
    return {
      traces: `read_parquet('${dir}/traces/**/*.parquet', hive_partitioning = true, union_by_name = true)`,
      spans: `read_parquet('${dir}/spans/**/*.parquet', hive_partitioning = true, union_by_name = true)`,
    };
  }


  it('lands spans from the http/protobuf and http/json exporters with the mapped fields, each span once', async () => {
    const { apiKey, orgId } = await provisionOrg(engines.tenancy);
    const proto = await exportFrom('proto', apiKey, 'ProtoAgent', { gzip: true });
    const json = await exportFrom('json', apiKey, 'JsonAgent');
    expect([proto.code, json.code]).toEqual([ExportResultCode.SUCCESS, ExportResultCode.SUCCESS]);

    const { traces, spans } = await landAndRead();
    const traceRows = await query(
      `SELECT trace_id, agent_name, session_id, environment, root_span_name, input_tokens, output_tokens FROM ${traces} WHERE org_id = '${orgId}' ORDER BY agent_name`,
    );
    const uuid = (hex: string) => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    expect(traceRows).toEqual([
      { trace_id: uuid(json.traceId), agent_name: 'JsonAgent', session_id: 'conv-JsonAgent', environment: 'it', root_span_name: 'invoke_agent JsonAgent', input_tokens: 321n, output_tokens: 45n },
      { trace_id: uuid(proto.traceId), agent_name: 'ProtoAgent', session_id: 'conv-ProtoAgent', environment: 'it', root_span_name: 'invoke_agent ProtoAgent', input_tokens: 321n, output_tokens: 45n },
    ]);
    const spanRows = await query(
      `SELECT name, kind, model, input_tokens, output_tokens, total_tokens, input, duration_ms, attributes FROM ${spans} WHERE org_id = '${orgId}' AND kind = 'llm' ORDER BY input`,
    );
    expect(spanRows).toHaveLength(2);
    for (const row of spanRows) {
      expect(row).toMatchObject({ name: 'chat gpt-4o', model: 'gpt-4o-2024-08-06', input_tokens: 321n, output_tokens: 45n, total_tokens: 366n, duration_ms: 1000 });
      expect(JSON.parse(row.attributes as string)).toMatchObject({ 'service.name': 'travel-agent', 'gen_ai.request.model': 'gpt-4o', 'otel.scope.name': '@example/genai-instrumentation' });
    }
    const counts = await query(`SELECT count(*) AS spans, count(DISTINCT (trace_id, span_id)) AS distinct_spans FROM ${spans} WHERE org_id = '${orgId}'`);
    expect(counts).toEqual([{ spans: 4n, distinct_spans: 4n }]);
  });

  it('is retried by the exporter after a 503 (Retry-After 5), and lands once', async () => {
    const { apiKey, orgId } = await provisionOrg(engines.tenancy);
    otlpRequests.length = 0;
    failNextPublish = true;
    expect(await exportFrom('proto', apiKey, 'Retried', { timeoutMs: 30_000 })).toMatchObject({ code: ExportResultCode.SUCCESS });
    expect(otlpRequests).toHaveLength(2);
    expect((otlpRequests[1] as number) - (otlpRequests[0] as number)).toBeGreaterThanOrEqual(4_900);
    const records = (await readStream(engines.kinesis, stream)).flatMap((shard) => shard.records.map((r) => decodeTraceRecord(r.data)));
    expect(records.filter((record) => record.context.org_id === orgId)).toHaveLength(1);
  });

  it('is refused with 429 when the minute window is full; the exporter honours Retry-After 60 past its timeout and reports failure', async () => {
    await awayFromMinuteEdge();
    const { apiKey } = await provisionOrg(engines.tenancy, { quotas: { minute: 1 } });
    expect(await exportFrom('proto', apiKey, 'First')).toMatchObject({ code: ExportResultCode.SUCCESS });
    otlpRequests.length = 0;
    const refused = await exportFrom('proto', apiKey, 'Second');
    expect(refused.code).toBe(ExportResultCode.FAILED);
    expect(refused.error).toMatch(/retryable status/);
    // One request: waiting the 60 s the answer asks for would pass the exporter's 10 s deadline.
    expect(otlpRequests).toHaveLength(1);
  });
});
