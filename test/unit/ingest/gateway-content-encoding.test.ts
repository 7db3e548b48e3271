import { gzipSync } from 'node:zlib';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { type ContentEncodingBehaviour, type HttpGateway, startHttpGateway } from '../../../devkit/local-stack/http-gateway.js';
import { createHarness, type Harness, publishedRecords } from '../../support/ingest-harness.js';
import { buildBatch, NOW_MICROS } from '../../../devkit/builders/trace-builders.js';

/** One span from the official SDK, started a minute before the harness clock. */
function sdkSpans() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const start = NOW_MICROS - 60_000_000;
  const span = provider.getTracer('t').startSpan('chat', { startTime: [Math.floor(start / 1e6), (start % 1e6) * 1000] });
  span.end([Math.floor(start / 1e6) + 1, 0]);
  return exporter.getFinishedSpans();
}

// API Gateway inflates gzip itself; AWS does not say whether Content-Encoding then reaches the
// function, so the ingest function must take the body in every state the gateway may hand it on.
describe.each<ContentEncodingBehaviour>(['inflate-keep-header', 'inflate-drop-header', 'pass-through'])('ingest behind a gateway whose gzip handling is %s', (contentEncoding) => {
  let h: Harness;
  let gateway: HttpGateway;
  beforeEach(async () => {
    h = await createHarness();
    gateway = await startHttpGateway({ port: 0, handler: (event) => h.invoke(event), behaviour: { contentEncoding } });
  });
  afterEach(() => gateway.stop());

  const post = (path: string, contentType: string, body: Uint8Array) =>
    fetch(`${gateway.url}${path}`, { method: 'POST', headers: { 'X-API-Key': h.orgKey, 'Content-Type': contentType, 'Content-Encoding': 'gzip' }, body: gzipSync(body) });

  it('accepts a gzip JSON batch', async () => {
    const response = await post('/v1/traces/ingest', 'application/json', Buffer.from(JSON.stringify(buildBatch(3))));
    await expect(response.json()).resolves.toMatchObject({ accepted: 3, rejected: 0 });
    expect(publishedRecords()).toHaveLength(3);
  });

  it.each([
    ['protobuf', 'application/x-protobuf', () => ProtobufTraceSerializer.serializeRequest(sdkSpans()) as Uint8Array],
    ['JSON', 'application/json', () => JsonTraceSerializer.serializeRequest(sdkSpans()) as Uint8Array],
  ])('accepts a gzip OTLP export in %s', async (_, contentType, body) => {
    const response = await post('/otel/v1/traces', contentType, body());
    expect(response.status).toBe(200);
    expect(publishedRecords()).toHaveLength(1);
  });
});
