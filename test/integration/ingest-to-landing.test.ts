import { createHash, randomBytes } from 'node:crypto';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { composeIngest } from '../../lambda/ingest/compose.js';
import { composeLanding } from '../../lambda/landing/compose.js';
import { decodeTraceRecord } from '../../lambda/shared/domain/trace-record.js';
import { provisionOrg } from '../../devkit/engines/engine-fixtures.js';
import { useEngineSuite } from '../support/engine-suite.js';
import { quietTelemetry } from '../../devkit/fakes/quiet-telemetry.js';
import { buildSpan, buildTrace, gatewayEvent, lambdaContext } from '../../devkit/builders/trace-builders.js';
import { kinesisEvent } from '../../devkit/builders/landing-builders.js';

type Json = Record<string, unknown>;

/**
 * The whole path on real engines: the ingest handler (DynamoDB Local, kinesalite, s3rver for traces
 * too large for a record) accepts batches, the landing handler consumes what the stream holds, one
 * event per shard like the event source mapping, and DuckDB reads the landed Parquet back.
 */
describe('ingest → stream → landing → Parquet, on DynamoDB Local, kinesalite and s3rver', () => {
  const tables = { tenancy: 'tenancy', rate: 'rate' };
  const stream = 'traces';
  const bucket = 'data';
  const workspace = 'ws-e2e';
  const engines = useEngineSuite({ tables, stream: { name: stream, shards: 2 }, bucket, duckdb: true });
  const { readShards, query } = engines;
  const download = engines.downloadBucket;

  beforeAll(() => {
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  });

  /** The ingest handler as composed in production, over the local engines, with a fixed clock. */
  function ingestHandler(nowMicros: number) {
    const handler = composeIngest({
      resources: { tenancyTable: tables.tenancy, rateTable: tables.rate, traceStream: stream, dataBucket: bucket },
      clients: { dynamodb: engines.dynamodb, kinesis: engines.kinesis, s3: engines.s3 },
      tenancyCache: false,
      idempotency: false,
      retries: { rateWindows: { maxAttempts: 8, baseDelayMs: 10, maxDelayMs: 200 } },
      ...quietTelemetry('e2e-ingest'),
      nowMicros: () => nowMicros,
    });
    return (apiKey: string, payload: unknown, options: { gzip: boolean; requestId: string }) =>
      handler(gatewayEvent({ apiKey, body: JSON.stringify(payload), ...options }), lambdaContext) as Promise<APIGatewayProxyResult>;
  }

  /** ~2 MB of random letters: incompressible enough that the trace travels by reference through S3. */
  function randomLetters(length: number): string {
    return Buffer.from(randomBytes(length).map((b) => 97 + (b % 26))).toString('latin1');
  }

  const md5 = (text: string) => createHash('md5').update(text, 'utf8').digest('hex');

  it('lands every accepted trace, inline or by reference, plain or gzip, with its context, readable by DuckDB', async () => {
    const { orgId, apiKey, keyId } = await provisionOrg(engines.tenancy, { workspaces: [workspace] });
    const receivedMicros = Date.now() * 1000 + 123;
    const post = ingestHandler(receivedMicros);
    const nowMs = Math.floor(receivedMicros / 1000);
    const now = new Date(nowMs).toISOString();
    const dt = now.slice(0, 10);
    const trace = (overrides: Json, spans: number) => buildTrace({ workspace_slug: workspace, ...overrides }, spans, nowMs);

    const plain = [trace({ environment: 'staging' }, 3), trace({ root_span_name: 'Zürich 東京 🚀' }, 1), { nonsense: true }];
    const huge = JSON.stringify(randomLetters(2_000_000)); // span input/output hold JSON text
    const big = trace({}, 2);
    (big.spans as Json[])[1] = buildSpan({ name: 'big-output', output: huge, timestamp: now }, 1);
    const gzipped = [trace({}, 2), big];

    const plainResponse = await post(apiKey, { traces: plain }, { gzip: false, requestId: 'req-plain' });
    const gzipResponse = await post(apiKey, { traces: gzipped }, { gzip: true, requestId: 'req-gzip' });
    expect([plainResponse.statusCode, JSON.parse(plainResponse.body)]).toEqual([200, expect.objectContaining({ accepted: 2, rejected: 1 })]);
    expect([gzipResponse.statusCode, JSON.parse(gzipResponse.body)]).toEqual([200, expect.objectContaining({ accepted: 2, rejected: 0 })]);

    const shards = await readShards();
    const decoded = shards.flat().map((r) => decodeTraceRecord(r.data));
    expect(decoded).toHaveLength(4);
    const references = decoded.filter((r) => 'ref' in r);
    expect(references).toEqual([expect.objectContaining({ ref: expect.objectContaining({ bucket, trace_id: big.trace_id }) })]);

    const land = composeLanding({ dataBucket: bucket, s3: engines.s3, ...quietTelemetry('e2e-landing') });
    for (const records of shards) if (records.length > 0) await land(kinesisEvent(records));

    const { dir, keys } = await download();
    expect(keys.filter((k) => k.startsWith('dead-letter/'))).toEqual([]);
    expect(keys.filter((k) => k.startsWith('overflow/'))).toHaveLength(1);
    for (const key of keys.filter((k) => k.endsWith('.parquet'))) expect(key).toMatch(new RegExp(`^(traces|spans)/org_id=${orgId}/dt=${dt}/hour=\\d{2}/shardId-\\d+-\\d+\\.parquet$`));

    const accepted = [plain[0], plain[1], ...gzipped] as Json[];
    const requestOf = (t: Json) => (gzipped.includes(t) ? 'req-gzip' : 'req-plain');
    const traces = `read_parquet('${dir}/traces/**/*.parquet', hive_partitioning = true)`;
    const spans = `read_parquet('${dir}/spans/**/*.parquet', hive_partitioning = true)`;
    const context = `org_id, dt::VARCHAR AS dt, workspace_slug, api_key_id, request_id, epoch_us(received_at)::VARCHAR AS received_us`;
    const expectedContext = (t: Json) => ({ org_id: orgId, dt, workspace_slug: workspace, api_key_id: keyId, request_id: requestOf(t), received_us: String(receivedMicros) });

    const traceRows = await query(
      `SELECT trace_id, environment, root_span_name, span_count, input_tokens::VARCHAR AS input_tokens, attributes, tags, epoch_us("timestamp")::VARCHAR AS ts_us, ${context}
       FROM ${traces} ORDER BY trace_id`,
    );
    expect(traceRows).toEqual(
      accepted
        .map((t) => ({
          trace_id: t.trace_id,
          environment: t.environment,
          root_span_name: t.root_span_name,
          span_count: (t.spans as Json[]).length,
          input_tokens: String(t.input_tokens),
          attributes: t.attributes,
          tags: ['prod'],
          ts_us: String(Date.parse(now) * 1000),
          ...expectedContext(t),
        }))
        .sort((a, b) => String(a.trace_id).localeCompare(String(b.trace_id))),
    );

    const spanRows = await query(
      `SELECT trace_id, span_index, span_id, name, input, md5(output) AS output_md5, length(output)::INTEGER AS output_length, tags, ${context}
       FROM ${spans} ORDER BY trace_id, span_index`,
    );
    expect(spanRows).toEqual(
      accepted
        .flatMap((t) =>
          (t.spans as Json[]).map((s, i) => ({
            trace_id: t.trace_id,
            span_index: i,
            span_id: s.span_id,
            name: s.name,
            input: s.input,
            output_md5: md5(s.output as string),
            output_length: (s.output as string).length,
            tags: JSON.parse(s.attributes as string).tags,
            ...expectedContext(t),
          })),
        )
        .sort((a, b) => String(a.trace_id).localeCompare(String(b.trace_id)) || a.span_index - b.span_index),
    );
    const bigRow = spanRows.find((r) => r.name === 'big-output');
    expect(bigRow).toMatchObject({ trace_id: big.trace_id, output_length: 2_000_002, output_md5: md5(huge) });
  });

  it('lands a request as one object per dataset, not one per shard: its records share a partition key', async () => {
    // Keyed by trace id, 40 traces would reach both shards (all on one: 2 in 2^40) and land as two objects each.
    const { orgId, apiKey } = await provisionOrg(engines.tenancy, { workspaces: [workspace] });
    const nowMs = Date.now();
    const response = await ingestHandler(nowMs * 1000)(apiKey, { traces: Array.from({ length: 40 }, () => buildTrace({ workspace_slug: workspace }, 2, nowMs)) }, { gzip: true, requestId: 'req-one-chunk' });
    expect(response.statusCode).toBe(200);

    const shards = await readShards();
    const ours = shards.map((records) => records.filter((record) => decodeTraceRecord(record.data).context.org_id === orgId));
    expect(ours.filter((records) => records.length > 0).map((records) => records.length)).toEqual([40]);

    const land = composeLanding({ dataBucket: bucket, s3: engines.s3, ...quietTelemetry('e2e-landing') });
    for (const records of ours) if (records.length > 0) await land(kinesisEvent(records));
    const { keys } = await download();
    const landed = keys.filter((key) => key.includes(`/org_id=${orgId}/`));
    expect(landed.filter((key) => key.startsWith('traces/'))).toHaveLength(1);
    expect(landed.filter((key) => key.startsWith('spans/'))).toHaveLength(1);
  });
});
