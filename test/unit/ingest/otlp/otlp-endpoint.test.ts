import { TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { context, SpanKind, SpanStatusCode, trace as traceApi } from '@opentelemetry/api';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { google, opentelemetry } from '../../../../devkit/generated/otlp-trace.js';
import type { InlineTraceRecord } from '../../../../lambda/shared/domain/trace-record.js';
import { loadOtlpFixture } from '../../../fixtures/otlp/load-fixture.js';
import { createHarness, ddbMock, type Harness, publishedRecords } from '../../../support/ingest-harness.js';
import { type EventOptions, gatewayEvent, NOW_MICROS } from '../../../../devkit/builders/trace-builders.js';

const START_NANOS = BigInt(NOW_MICROS - 60_000_000) * 1000n;
const JSON_TYPE = { 'Content-Type': 'application/json' };
const PROTO_TYPE = { 'Content-Type': 'application/x-protobuf' };

const otlpEvent = (options: EventOptions) => gatewayEvent({ ...options, route: 'otlp' });


const jsonBody = (response: APIGatewayProxyResult) => JSON.parse(response.body) as Record<string, unknown>;
const protoBytes = (response: APIGatewayProxyResult) => Buffer.from(response.body, response.isBase64Encoded ? 'base64' : 'utf8');

/** Spans made by the official SDK, as its exporters would serialize them. */
function sdkSpans(build: (tracer: ReturnType<BasicTracerProvider['getTracer']>) => void) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'checkout', 'deployment.environment.name': 'test' }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  build(provider.getTracer('genai-test', '1.0.0'));
  return exporter.getFinishedSpans();
}

const startTime = (offsetMs: number): [number, number] => {
  const micros = NOW_MICROS - 60_000_000 + offsetMs * 1000;
  return [Math.floor(micros / 1_000_000), (micros % 1_000_000) * 1000];
};

function agentWithChat(tracer: ReturnType<BasicTracerProvider['getTracer']>) {
  const agent = tracer.startSpan('invoke_agent Planner', { kind: SpanKind.INTERNAL, startTime: startTime(0) });
  agent.setAttributes({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'Planner', 'gen_ai.conversation.id': 'c-1' });
  {
    const chat = tracer.startSpan('chat claude', { kind: SpanKind.CLIENT, startTime: startTime(10) }, traceApi.setSpan(context.active(), agent));
    chat.setAttributes({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'claude-sonnet-4',
      'gen_ai.usage.input_tokens': 120,
      'gen_ai.usage.output_tokens': 30,
      'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: 'plan a trip' }] }]),
    });
    chat.setStatus({ code: SpanStatusCode.ERROR, message: 'overloaded' });
    chat.end(startTime(1_010));
    agent.end(startTime(2_000));
  }
}

describe('POST /otel/v1/traces', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await createHarness({ quotas: { minute: 5 } });
  });

  describe('maps recorded instrumentation output (OTLP/JSON) into trace records', () => {
    it('reads the current GenAI conventions: kinds, model, tokens, messages, agent, conversation, errors', async () => {
      const response = await h.invoke(otlpEvent({ apiKey: h.orgKey, headers: JSON_TYPE, body: loadOtlpFixture('genai-current', START_NANOS) }));
      expect(response.statusCode).toBe(200);
      expect(response.headers?.['Content-Type']).toBe('application/json');
      expect(jsonBody(response)).toEqual({});
      const [record] = publishedRecords();
      const { trace, context } = record as InlineTraceRecord;
      expect(context.spans_only).toBeUndefined();
      expect(trace).toMatchObject({
        trace_id: '5b8efff7-9803-8103-d269-b633813fc60c',
        environment: 'production',
        root_span_name: 'invoke_agent Support',
        duration_ms: 2450.123,
        agent_id: 'asst_5j66UpCpwteGg4YSxUnt7lPY',
        agent_name: 'Support',
        session_id: 'conv_5j66UpCpwteGg4YSxUnt7lPY',
        user_id: 'user-42',
        model: 'gpt-4o-2024-08-06',
        input_tokens: 97,
        output_tokens: 52,
        total_tokens: 149,
      });
      expect(JSON.parse(trace.attributes)).toMatchObject({ 'service.name': 'support-agent', 'otel.trace_id': '5b8efff798038103d269b633813fc60c' });
      const [root, chat, tool] = trace.spans;
      expect(root).toMatchObject({ span_id: '5b8efff7-9803-8103-eee1-9b7ec3c1b174', parent_span_id: null, kind: 'agent', status: 'ok' });
      expect(chat).toMatchObject({
        span_id: '5b8efff7-9803-8103-a1b2-c3d4e5f60718',
        parent_span_id: root?.span_id,
        kind: 'llm',
        model: 'gpt-4o-2024-08-06',
        input_tokens: 97,
        output_tokens: 52,
        total_tokens: 149,
        duration_ms: 1200.456,
      });
      expect(JSON.parse(chat?.input ?? '')).toEqual([{ role: 'user', parts: [{ type: 'text', content: 'Where is my order?' }] }]);
      expect(JSON.parse(chat?.output ?? '')[0].finish_reason).toBe('stop');
      const chatAttributes = JSON.parse(chat?.attributes ?? '{}');
      expect(chatAttributes).toMatchObject({
        'service.name': 'support-agent',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.temperature': 0.2,
        'gen_ai.response.finish_reasons': ['stop'],
        'otel.span_id': 'a1b2c3d4e5f60718',
        'otel.parent_span_id': 'eee19b7ec3c1b174',
        'otel.span_kind': 'client',
        'otel.scope.name': 'opentelemetry.instrumentation.openai_v2',
      });
      expect(chatAttributes).not.toHaveProperty('gen_ai.usage.input_tokens');
      expect(chatAttributes).not.toHaveProperty('gen_ai.input.messages');
      expect(chatAttributes).not.toHaveProperty('deployment.environment.name');
      expect(tool).toMatchObject({ kind: 'tool', status: 'error', error_message: 'TimeoutError: order service timed out' });
      // The exception event stays whole (stack trace included) under otel.events.
      expect(JSON.parse(tool?.attributes ?? '{}')['otel.events']).toEqual([
        { name: 'exception', time: expect.any(String), attributes: { 'exception.type': 'TimeoutError', 'exception.message': 'order service timed out' } },
      ]);
    });

    it('reads the older names: prompt/completion tokens, flattened prompts, message events, deployment.environment', async () => {
      const response = await h.invoke(otlpEvent({ apiKey: h.orgKey, headers: JSON_TYPE, body: loadOtlpFixture('genai-legacy', START_NANOS) }));
      expect(response.statusCode).toBe(200);
      const { trace } = publishedRecords()[0] as InlineTraceRecord;
      expect(trace).toMatchObject({ environment: 'staging', session_id: 'sess-7', user_id: 'alice', input_tokens: 31, output_tokens: 9, total_tokens: 40 });
      const [openai, chat] = trace.spans;
      expect(openai).toMatchObject({ kind: 'llm', model: 'gpt-3.5-turbo', input_tokens: 31, output_tokens: 9, total_tokens: 40 });
      expect(JSON.parse(openai?.input ?? '')).toEqual([
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Capital of France?' },
      ]);
      expect(JSON.parse(openai?.output ?? '')).toEqual([{ role: 'assistant', content: 'Paris.', finish_reason: 'stop' }]);
      expect(JSON.parse(chat?.input ?? '')).toEqual([
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Capital of France?' },
      ]);
      expect(JSON.parse(chat?.output ?? '')).toEqual([{ index: 0, finish_reason: 'stop', message: { content: 'Paris.' } }]);
    });

    it('reads OpenInference: span kinds, llm.model_name, llm.token_count.*, input/output values, tags', async () => {
      const response = await h.invoke(otlpEvent({ apiKey: h.orgKey, headers: JSON_TYPE, body: loadOtlpFixture('openinference', START_NANOS) }));
      expect(response.statusCode).toBe(200);
      const { trace } = publishedRecords()[0] as InlineTraceRecord;
      const [query, retrieve, llm] = trace.spans;
      expect(query).toMatchObject({ kind: 'chain', input: '"What did the author do growing up?"', output: '{"response": "He wrote short stories."}', session_id: 'oi-session-1' });
      expect(JSON.parse(query?.attributes ?? '{}').tags).toEqual(['rag', 'eval']);
      expect(retrieve).toMatchObject({ kind: 'retriever' });
      expect(llm).toMatchObject({ kind: 'llm', model: 'claude-3-5-sonnet', input_tokens: 1200, output_tokens: 80, total_tokens: 1280 });
      expect(JSON.parse(llm?.input ?? '')).toEqual([{ role: 'user', content: 'Context: ... Question: ...' }]);
      expect(trace).toMatchObject({ root_span_name: 'query', model: 'claude-3-5-sonnet', total_tokens: 1280 });
    });
  });

  describe('takes what the official SDK serializes', () => {
    const spans = sdkSpans(agentWithChat);

    it('decodes the protobuf body and answers a binary ExportTraceServiceResponse', async () => {
      const body = Buffer.from(ProtobufTraceSerializer.serializeRequest(spans) as Uint8Array);
      const response = await h.invoke(otlpEvent({ apiKey: h.orgKey, headers: PROTO_TYPE, body }));
      expect(response.statusCode).toBe(200);
      expect(response.headers?.['Content-Type']).toBe('application/x-protobuf');
      const answer = opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse.decode(protoBytes(response));
      expect(answer.partialSuccess).toBeNull();
      const { trace } = publishedRecords()[0] as InlineTraceRecord;
      expect(trace).toMatchObject({ environment: 'test', root_span_name: 'invoke_agent Planner', agent_name: 'Planner', session_id: 'c-1', input_tokens: 120 });
      const chat = trace.spans.find((span) => span.kind === 'llm');
      expect(chat).toMatchObject({ model: 'claude-sonnet-4', status: 'error', error_message: 'overloaded', duration_ms: 1000 });
      expect(JSON.parse(chat?.attributes ?? '{}')).toMatchObject({ 'service.name': 'checkout', 'otel.scope.name': 'genai-test' });
    });

    it('decodes the same spans sent gzip-compressed, as JSON and as protobuf, to the same records', async () => {
      const json = Buffer.from(JsonTraceSerializer.serializeRequest(spans) as Uint8Array);
      const proto = Buffer.from(ProtobufTraceSerializer.serializeRequest(spans) as Uint8Array);
      const a = await h.invoke(otlpEvent({ apiKey: h.orgKey, headers: JSON_TYPE, body: json, gzip: true }));
      const b = await h.invoke(otlpEvent({ apiKey: h.orgKey, headers: PROTO_TYPE, body: proto, gzip: true }));
      expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
      const [fromJson, fromProto] = publishedRecords();
      expect(fromJson?.trace).toEqual(fromProto?.trace);
    });
  });

  describe('answers as OTLP/HTTP says', () => {
    it('rejects invalid spans alone, with partial_success naming the problem', async () => {
      const text = loadOtlpFixture('genai-current', START_NANOS)
        .replace('"spanId": "0F1E2D3C4B5A6978"', '"spanId": "0000000000000000"')
        .replace('"startTimeUnixNano": "' + String(START_NANOS + 100_000_000n) + '"', '"startTimeUnixNano": "0"');
      const response = await h.invoke(otlpEvent({ apiKey: h.orgKey, headers: JSON_TYPE, body: text }));
      expect(response.statusCode).toBe(200);
      const partial = jsonBody(response).partialSuccess as { rejectedSpans: string; errorMessage: string };
      expect(partial.rejectedSpans).toBe('2');
      expect(partial.errorMessage).toMatch(/span_id is not 8 bytes/);
      expect(partial.errorMessage).toMatch(/timestamp timestamp_out_of_range/);
      const { trace } = publishedRecords()[0] as InlineTraceRecord;
      expect(trace.spans.map((span) => span.name)).toEqual(['invoke_agent Support']);
    });

    it('writes partial_success in protobuf for a protobuf request', async () => {
      const spans = sdkSpans(agentWithChat);
      const request = opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest.decode(
        ProtobufTraceSerializer.serializeRequest(spans) as Uint8Array,
      );
      const first = request.resourceSpans[0]?.scopeSpans?.[0]?.spans?.[0];
      if (first) first.spanId = new Uint8Array(3);
      const body = Buffer.from(opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest.encode(request).finish());
      const response = await h.invoke(otlpEvent({ apiKey: h.orgKey, headers: PROTO_TYPE, body }));
      const answer = opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse.decode(protoBytes(response));
      expect(Number(answer.partialSuccess?.rejectedSpans)).toBe(1);
      expect(answer.partialSuccess?.errorMessage).toMatch(/span_id/);
    });

    it('answers an undecodable protobuf body with 400 and a binary google.rpc.Status', async () => {
      const response = await h.invoke(otlpEvent({ apiKey: h.orgKey, headers: PROTO_TYPE, body: Buffer.from([0x0a, 0xff, 0xff, 0x01]) }));
      expect(response.statusCode).toBe(400);
      const status = google.rpc.Status.decode(protoBytes(response));
      expect(status.code).toBe(3);
      expect(status.message).toMatch(/^Malformed body: not a valid protobuf ExportTraceServiceRequest/);
      expect(response.headers?.['Retry-After']).toBeUndefined();
    });

    it('answers an undecodable JSON body with 400 and a JSON google.rpc.Status', async () => {
      const response = await h.invoke(otlpEvent({ apiKey: h.orgKey, headers: JSON_TYPE, body: '{"resourceSpans": [{"scopeSpans": 7}]}' }));
      expect(response.statusCode).toBe(400);
      expect(jsonBody(response)).toEqual({ code: 3, message: 'Malformed body: /resourceSpans/0/scopeSpans must be an array', details: [] });
    });

    it('answers 415 for a content type that is neither encoding', async () => {
      const response = await h.invoke(otlpEvent({ apiKey: h.orgKey, headers: { 'Content-Type': 'text/plain' }, body: 'x' }));
      expect(response.statusCode).toBe(415);
      expect(jsonBody(response).message).toMatch(/application\/x-protobuf or application\/json/);
    });

    it('answers 401 in protobuf without a key, before reading the body', async () => {
      const response = await h.invoke(otlpEvent({ headers: PROTO_TYPE, body: Buffer.from('garbage') }));
      expect(response.statusCode).toBe(401);
      expect(google.rpc.Status.decode(protoBytes(response))).toMatchObject({ code: 16, message: expect.stringMatching(/^Invalid or missing API key/) });
    });

    it('needs X-Workspace-Slug for a workspace-scoped key (400) and refuses another workspace (403)', async () => {
      const body = loadOtlpFixture('genai-current', START_NANOS);
      const missing = await h.invoke(otlpEvent({ apiKey: h.workspaceKey, headers: JSON_TYPE, body }));
      expect(missing.statusCode).toBe(400);
      expect(jsonBody(missing).message).toMatch(/X-Workspace-Slug/);
      const other = await h.invoke(otlpEvent({ apiKey: h.workspaceKey, headers: { ...JSON_TYPE, 'X-Workspace-Slug': 'support' }, body }));
      expect(other.statusCode).toBe(403);
      const own = await h.invoke(otlpEvent({ apiKey: h.workspaceKey, headers: { ...JSON_TYPE, 'X-Workspace-Slug': 'research' }, body }));
      expect(own.statusCode).toBe(200);
      expect(publishedRecords()[0]?.context.workspace_slug).toBe('research');
    });

    it('counts distinct trace ids against the rate windows and answers 429 with Retry-After when full', async () => {
      const traces = ['genai-current', 'genai-legacy', 'openinference'].map((name) => JSON.parse(loadOtlpFixture(name, START_NANOS)).resourceSpans).flat();
      const body = JSON.stringify({ resourceSpans: traces });
      const first = await h.invoke(otlpEvent({ apiKey: h.orgKey, headers: JSON_TYPE, body }));
      expect(first.statusCode).toBe(200);
      const reserve = ddbMock.commandCalls(TransactWriteItemsCommand)[0]?.args[0].input.TransactItems?.[0]?.Update;
      expect(reserve?.ExpressionAttributeValues?.[':n']).toEqual({ N: '3' });
      ddbMock.on(TransactWriteItemsCommand).rejects(
        new TransactionCanceledException({ message: 'Transaction cancelled', $metadata: {}, CancellationReasons: [{ Code: 'ConditionalCheckFailed' }] }),
      );
      const second = await h.invoke(otlpEvent({ apiKey: h.orgKey, headers: JSON_TYPE, body }));
      expect(second.statusCode).toBe(429);
      expect(second.headers?.['Retry-After']).toBe('60');
      expect(jsonBody(second)).toMatchObject({ code: 8, message: expect.stringMatching(/^Rate limit exceeded/) });
    });

    it('marks an export without the root span as spans-only, so the trace row comes from the root export', async () => {
      const parsed = JSON.parse(loadOtlpFixture('genai-current', START_NANOS));
      const spans = parsed.resourceSpans[0].scopeSpans[0].spans;
      parsed.resourceSpans[0].scopeSpans[0].spans = spans.slice(1);
      const response = await h.invoke(otlpEvent({ apiKey: h.orgKey, headers: JSON_TYPE, body: JSON.stringify(parsed) }));
      expect(response.statusCode).toBe(200);
      const record = publishedRecords()[0] as InlineTraceRecord;
      expect(record.context.spans_only).toBe(true);
      expect(record.trace).toMatchObject({ trace_id: '5b8efff7-9803-8103-d269-b633813fc60c', root_span_name: '' });
      expect(record.trace.spans).toHaveLength(2);
    });
  });
});

