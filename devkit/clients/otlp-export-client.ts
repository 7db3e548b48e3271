import { context, SpanKind, SpanStatusCode, trace as traceApi } from '@opentelemetry/api';
import type { ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpHttpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

// A real client process: the official exporters load their HTTP transport with a dynamic import,
// which Jest's module sandbox cannot run. Prints the export result and the trace id as JSON.
// Usage: tsx otlp-export-client.ts <proto|json> <url> <api key> <agent name> [timeout ms] [gzip]

/** An agent run with one chat call, as GenAI instrumentation records it, finished a second ago. */
function genAiSpans(agentName: string): ReadableSpan[] {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'travel-agent', 'deployment.environment.name': 'it' }),
    spanProcessors: [new SimpleSpanProcessor(memory)],
  });
  const tracer = provider.getTracer('@example/genai-instrumentation', '0.1.0');
  const start = Date.now() - 3_000;
  const agent = tracer.startSpan(`invoke_agent ${agentName}`, { startTime: start });
  agent.setAttributes({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': agentName, 'gen_ai.conversation.id': `conv-${agentName}` });
  const chat = tracer.startSpan('chat gpt-4o', { kind: SpanKind.CLIENT, startTime: start + 100 }, traceApi.setSpan(context.active(), agent));
  chat.setAttributes({
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': 'gpt-4o',
    'gen_ai.response.model': 'gpt-4o-2024-08-06',
    'gen_ai.usage.input_tokens': 321,
    'gen_ai.usage.output_tokens': 45,
    'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: `hello ${agentName}` }] }]),
    'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: 'hi' }] }]),
  });
  chat.end(start + 1_100);
  agent.setStatus({ code: SpanStatusCode.OK });
  agent.end(start + 2_000);
  return memory.getFinishedSpans();
}

const [protocol, url, apiKey, agentName, timeout, gzip] = process.argv.slice(2) as [string, string, string, string, string?, string?];
const options = {
  url,
  headers: { 'X-API-Key': apiKey },
  timeoutMillis: Number(timeout ?? 10_000),
  ...(gzip === 'gzip' ? { compression: 'gzip' as never } : {}),
};
const exporter = protocol === 'proto' ? new OtlpProtoExporter(options) : new OtlpHttpJsonExporter(options);
const spans = genAiSpans(agentName);
const result = await new Promise<ExportResult>((resolve) => exporter.export(spans, resolve));
await exporter.shutdown();
process.stdout.write(JSON.stringify({ code: result.code, error: result.error ? String(result.error) : null, traceId: spans[0]?.spanContext().traceId }));
