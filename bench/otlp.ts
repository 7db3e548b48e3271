import { randomUUID } from 'node:crypto';
import { build } from 'esbuild';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { opentelemetry } from '../devkit/generated/otlp-trace.js';
import type { TraceDraft } from '../lambda/ingest/core/draft.js';
import { validateDraft } from '../lambda/ingest/core/validation/validate-trace.js';
import type { AcceptedTrace } from '../lambda/shared/domain/trace.js';
import { buildTrace, groupSpans } from '../lambda/ingest/otlp/map-export.js';
import { decodeExportRequest } from '../lambda/ingest/otlp/protobuf/decode-export-request.js';
import { gatewayEvent, lambdaContext } from '../devkit/builders/trace-builders.js';
import { cpuMicros, cpuMicrosAsync, round } from './engines-util.js';
import { fakedIngestHandler } from './ingest-workload.js';
import type { BenchResult } from './types.js';

/** A BatchSpanProcessor-sized export: 512 spans, 64 agent runs of 8 GenAI spans. */
const TRACES = 64;
const SPANS_PER_TRACE = 8;
const SPANS = TRACES * SPANS_PER_TRACE;

type SpanProps = opentelemetry.proto.trace.v1.Span.$Properties;
type KeyValueProps = opentelemetry.proto.common.v1.KeyValue.$Properties;

const text = (key: string, value: string): KeyValueProps => ({ key, value: { stringValue: value } });
type AnyValueProps = opentelemetry.proto.common.v1.AnyValue.$Properties;
const int = (key: string, value: number): KeyValueProps => ({ key, value: { intValue: value as unknown as AnyValueProps['intValue'] } });
const hex = (n: number, digits: number) => Uint8Array.from(Buffer.from(n.toString(16).padStart(digits, '0'), 'hex'));

/** GenAI-shaped spans as an instrumented agent exports them: an agent root, chat calls and tool calls. */
export function genAiExport(nowMs = Date.now()): Uint8Array {
  const spans: SpanProps[] = [];
  for (let t = 0; t < TRACES; t++) {
    const traceId = hex(0x1000 + t, 32);
    const start = BigInt(nowMs - 60_000 + t * 10) * 1_000_000n;
    for (let s = 0; s < SPANS_PER_TRACE; s++) {
      const chat = s % 2 === 1;
      const attributes: KeyValueProps[] =
        s === 0
          ? [text('gen_ai.operation.name', 'invoke_agent'), text('gen_ai.agent.name', 'Support'), text('gen_ai.conversation.id', `conv-${t}`)]
          : chat
            ? [
                text('gen_ai.operation.name', 'chat'),
                text('gen_ai.request.model', 'gpt-4o'),
                text('gen_ai.response.model', 'gpt-4o-2024-08-06'),
                int('gen_ai.usage.input_tokens', 400 + s),
                int('gen_ai.usage.output_tokens', 60 + s),
                text('gen_ai.input.messages', JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: `Question ${t}/${s}: ${'where is my order and when will it ship '.repeat(4)}` }] }])),
                text('gen_ai.output.messages', JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: `Answer ${t}/${s}: ${'it ships tomorrow from the main warehouse '.repeat(4)}` }] }])),
              ]
            : [text('gen_ai.operation.name', 'execute_tool'), text('gen_ai.tool.name', 'lookup_order'), text('gen_ai.tool.call.id', `call-${t}-${s}`)];
      spans.push({
        traceId,
        spanId: hex(0x100 + s, 16),
        parentSpanId: s === 0 ? new Uint8Array(0) : hex(0x100, 16),
        name: s === 0 ? 'invoke_agent Support' : chat ? 'chat gpt-4o' : 'execute_tool lookup_order',
        kind: chat ? 3 : 1,
        startTimeUnixNano: (start + BigInt(s) * 1_000_000n).toString() as unknown as SpanProps['startTimeUnixNano'],
        endTimeUnixNano: (start + BigInt(s) * 1_000_000n + 250_000_000n).toString() as unknown as SpanProps['endTimeUnixNano'],
        attributes,
        status: { code: 1 },
      });
    }
  }
  return opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest.encode({
    resourceSpans: [
      {
        resource: { attributes: [text('service.name', 'support-agent'), text('deployment.environment.name', 'production'), text('telemetry.sdk.language', 'nodejs')] },
        scopeSpans: [{ scope: { name: 'opentelemetry-instrumentation-openai', version: '0.5.0' }, spans }],
      },
    ],
  }).finish();
}

/** A draft of the OTLP route as a client of the JSON route would send it: the trace validation makes of it. */
function asSent(draft: TraceDraft): Omit<AcceptedTrace, 'workspace_slug'> {
  const validated = validateDraft(draft, Date.now() * 1000, randomUUID);
  if (!validated.ok) throw new Error(`bench export has an invalid trace: ${JSON.stringify(validated.issues)}`);
  const { workspace_slug: _slug, ...trace } = validated.trace;
  return trace;
}

/**
 * Handler CPU per span on the OTLP route (protobuf) against protobuf decoding alone of the same
 * export, and against the JSON route given the same traces as the mapping builds them; all three
 * alternate in one run, with in-memory fakes of AWS. Plus the size of the codec as bundled.
 *
 * 60 rounds, not 15: with 15 the fastest samples still moved with GC timing (on a quiet machine 10 runs gave 1.01 to
 * 1.25 against the JSON route; with 60, 5 runs gave 1.07 to 1.10). About 12 s a run.
 */
export async function runOtlpBench(rounds = 60): Promise<BenchResult[]> {
  const body = Buffer.from(genAiExport());
  const { handler, apiKey, stats } = fakedIngestHandler();
  const otlpEvent = gatewayEvent({ route: 'otlp', apiKey, headers: { 'Content-Type': 'application/x-protobuf' }, body });
  const traces = groupSpans(decodeExportRequest(body)).groups.map((group) => asSent(buildTrace(group, undefined).draft));
  const jsonBody = JSON.stringify({ traces });
  // Base64 like the protobuf export, as the deployed REST API hands every body to Lambda (binaryMediaTypes '*/*').
  const jsonEvent = gatewayEvent({ apiKey, body: Buffer.from(jsonBody) });
  const invoke = async (event: APIGatewayProxyEvent) => {
    const response = (await handler(event, lambdaContext)) as APIGatewayProxyResult;
    if (response.statusCode !== 200 || (event === otlpEvent && response.body !== '')) {
      throw new Error(`bench export refused or partly rejected: ${response.statusCode} ${response.body}`);
    }
  };
  // The route's own decoder (hand-written, lambda/ingest/otlp/protobuf/decode-export-request.ts), as the handler runs it.
  const decodeOnly = () => void decodeExportRequest(body);

  const otlp: number[] = [];
  const decode: number[] = [];
  const json: number[] = [];
  for (let round = 0; round < rounds + 2; round++) {
    // Alternate the three so drift in machine load affects all alike; the first rounds warm up.
    const o = await cpuMicrosAsync(() => invoke(otlpEvent));
    const d = cpuMicros(decodeOnly);
    const j = await cpuMicrosAsync(() => invoke(jsonEvent));
    if (round >= 2) {
      otlp.push(o / SPANS);
      decode.push(d / SPANS);
      json.push(j / SPANS);
    }
  }
  if (stats.published === 0) throw new Error('bench published nothing');
  const otlpPerSpan = Math.min(...otlp);
  const decodePerSpan = Math.min(...decode);
  const jsonPerSpan = Math.min(...json);

  const bundle = await build({
    stdin: {
      contents: "export { decodeExportRequest } from './lambda/ingest/otlp/protobuf/decode-export-request.ts'; export { encodeExportResponse, encodeStatus } from './lambda/ingest/otlp/protobuf/encode-export-response.ts';",
      resolveDir: process.cwd(),
      loader: 'ts',
    },
    bundle: true,
    minify: true,
    write: false,
    platform: 'node',
    format: 'esm',
  });
  const decoderBytes = bundle.outputFiles[0]?.contents.byteLength ?? 0;
  const shape = `${TRACES} traces × ${SPANS_PER_TRACE} GenAI spans, ${(body.length / 1024).toFixed(0)} KiB protobuf`;
  const samples = `fastest of ${rounds} alternating samples each`;
  return [
    {
      group: 'otlp',
      metric: `OTLP route handler CPU per span (${shape})`,
      value: round(otlpPerSpan),
      unit: 'µs/span',
      baseline: round(decodePerSpan),
      ratio: round(otlpPerSpan / decodePerSpan, 1),
      note: `baseline: protobuf decoding alone (the route's decoder, straight into the OTLP model) of the same export, same run; ${samples}`,
    },
    {
      group: 'otlp',
      metric: 'OTLP route spans per second of handler CPU (protobuf)',
      value: Math.round(1e6 / otlpPerSpan),
      unit: 'spans/s',
      baseline: Math.round(1e6 / decodePerSpan),
      note: 'baseline: spans per second of protobuf decoding alone',
    },
    {
      group: 'otlp',
      metric: 'OTLP route handler CPU per span against the JSON route given the same traces',
      value: round(otlpPerSpan),
      unit: 'µs/span',
      baseline: round(jsonPerSpan),
      ratio: round(otlpPerSpan / jsonPerSpan, 2),
      target: '<= 1.2',
      note: `baseline: POST /v1/traces/ingest with the TraceIngest objects the mapping builds from this export (${(jsonBody.length / 1024).toFixed(0)} KiB JSON); ${samples}`,
    },
    {
      group: 'otlp',
      metric: 'OTLP protobuf codec bundled alone (lambda/ingest/otlp/protobuf/: the decoder and the encoder of the answers, minified)',
      value: round(decoderBytes / 1024, 1),
      unit: 'KiB',
    },
  ];
}
