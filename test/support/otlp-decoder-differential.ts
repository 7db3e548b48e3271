import { context, SpanKind, SpanStatusCode, trace as traceApi } from '@opentelemetry/api';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import Long from 'long';
import { opentelemetry } from '../../devkit/generated/otlp-trace.js';
import type { OtlpExport, OtlpSpan } from '../../lambda/ingest/otlp/otlp-model.js';
import { decodeExportRequest } from '../../lambda/ingest/otlp/protobuf/decode-export-request.js';
import { loadOtlpFixture, RECORDED_AT_NANOS } from '../fixtures/otlp/load-fixture.js';
import { otlp } from './protobuf-bytes.js';
import { decodeWithProtobufjs } from './protobufjs-export-decoder.js';

/**
 * The differential tests of the hand-written protobuf decoder (test/unit/ingest/otlp/protobuf/): the same bytes
 * decoded by it and by the protobufjs-generated oracle, and the exports they decode (the recorded fixtures, an
 * SDK-made export, one using every field of the protos).
 */

const Request = opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

export type Outcome = { ok: true; decoded: OtlpExport } | { ok: false; message: string };

export function attempt(decode: (bytes: Buffer) => OtlpExport, bytes: Buffer): Outcome {
  try {
    return { ok: true, decoded: decode(bytes) };
  } catch (error) {
    return { ok: false, message: (error as Error).message };
  }
}

/** Key order included: the mapping writes attributes out as JSON text in the order decoded. */
const sameExport = (a: OtlpExport, b: OtlpExport): boolean => {
  try {
    expect(a).toEqual(b);
  } catch {
    return false;
  }
  return JSON.stringify(a) === JSON.stringify(b);
};

/** Why the two decoders disagree on `bytes`, if they do. */
export function disagreement(bytes: Buffer): string | undefined {
  const ours = attempt(decodeExportRequest, bytes);
  const oracle = attempt(decodeWithProtobufjs, bytes);
  if (ours.ok !== oracle.ok) {
    return `ours ${ours.ok ? 'accepts' : `refuses (${ours.message})`}, protobufjs ${oracle.ok ? 'accepts' : `refuses (${oracle.message})`}: ${bytes.toString('hex').slice(0, 400)}`;
  }
  if (ours.ok && oracle.ok && !sameExport(ours.decoded, oracle.decoded)) {
    return `decoded differently: ${bytes.toString('hex').slice(0, 400)}\nours ${JSON.stringify(ours.decoded).slice(0, 600)}\nprotobufjs ${JSON.stringify(oracle.decoded).slice(0, 600)}`;
  }
  return undefined;
}

/** Decodes both ways, expects the same outcome, and returns ours. */
export function decodeAgreeing(bytes: Buffer): Outcome {
  expect(disagreement(bytes)).toBeUndefined();
  return attempt(decodeExportRequest, bytes);
}

export function decodedSpan(bytes: Buffer): OtlpSpan {
  const outcome = decodeAgreeing(bytes);
  if (!outcome.ok) throw new Error(`refused: ${outcome.message}`);
  const span = outcome.decoded.resourceSpans[0]?.scopeSpans[0]?.spans[0];
  if (!span) throw new Error('no span decoded');
  return span;
}

export const refusal = (bytes: Buffer): string => {
  const outcome = decodeAgreeing(bytes);
  if (outcome.ok) throw new Error('accepted');
  return outcome.message;
};

/** The value of the one attribute of the one span. */
export const attributeValue = (value?: Buffer): unknown => decodedSpan(otlp.oneSpan(otlp.attribute('a', value))).attributes.a;

// ---------------------------------------------------------------------------------------------------------------
// Exports the tests decode: the recorded fixtures, SDK-made exports, and one using every field of the protos.

/** OTLP/JSON (a fixture) as the protobuf the same export is in: hex ids and base64 bytes as bytes. */
function protobufOfJson(text: string): Buffer {
  const convert = (key: string, value: unknown): unknown => {
    if ((key === 'traceId' || key === 'spanId' || key === 'parentSpanId') && typeof value === 'string') return Buffer.from(value, 'hex');
    if (key === 'bytesValue' && typeof value === 'string') return Buffer.from(value, 'base64');
    if (key === 'intValue' && typeof value === 'string') return Long.fromString(value);
    if (Array.isArray(value)) return value.map((item) => convert('', item));
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, convert(k, v)]));
    return value;
  };
  return Buffer.from(Request.encode(convert('', JSON.parse(text)) as opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest.$Properties).finish());
}

export const fixtures = ['genai-current', 'genai-legacy', 'openinference'].map((name) => [name, protobufOfJson(loadOtlpFixture(name, RECORDED_AT_NANOS))] as const);

/** An agent run as the OTel SDK exports it: events, an exception, links, status, attributes of every type. */
function sdkExport(): Buffer {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'checkout', 'deployment.environment.name': 'test', 'host.cores': 8, 'feature.flags': ['a', 'b'] }),
    spanProcessors: [new SimpleSpanProcessor(memory)],
  });
  const tracer = provider.getTracer('genai-test', '1.0.0');
  const start = 1_700_000_000_123;
  const agent = tracer.startSpan('invoke_agent Planner', { kind: SpanKind.INTERNAL, startTime: [1_700_000_000, 123_456_789] });
  agent.setAttributes({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'Planner — ünïcode ✓ 🚀', 'ratio': 0.25, 'count': 12, 'big': 2 ** 60, 'ok': true, 'list': [1, 2, 3], 'flags': [true, false] });
  const chat = tracer.startSpan('chat claude', { kind: SpanKind.CLIENT, startTime: start + 10, links: [{ context: agent.spanContext(), attributes: { 'link.kind': 'follows' } }] }, traceApi.setSpan(context.active(), agent));
  chat.setAttributes({ 'gen_ai.request.model': 'claude-sonnet-4', 'gen_ai.usage.input_tokens': 120, 'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: 'plan a trip' }] }]) });
  chat.addEvent('gen_ai.choice', { index: 0, 'finish_reason': 'stop' }, start + 500);
  chat.recordException(new Error('overloaded'), start + 900);
  chat.setStatus({ code: SpanStatusCode.ERROR, message: 'overloaded' });
  chat.end(start + 1_010);
  agent.setStatus({ code: SpanStatusCode.OK });
  agent.end(start + 2_000);
  return Buffer.from(ProtobufTraceSerializer.serializeRequest(memory.getFinishedSpans()) as Uint8Array);
}

/** Every field of every message the request holds, with values at their edges. */
export function everyFieldExport(): Buffer {
  const long = (value: bigint) => Long.fromString(value.toString(), false);
  const unsigned = (value: bigint) => Long.fromString(value.toString(), true);
  const values = [
    { stringValue: '' },
    { stringValue: '\uFEFFbom and \uFFFD replacement, ünïcode ✓ 🚀' },
    { boolValue: false },
    { boolValue: true },
    { intValue: long(0n) },
    { intValue: long(-1n) },
    { intValue: long(2n ** 53n - 1n) },
    { intValue: long(2n ** 53n) },
    { intValue: long(-(2n ** 63n)) },
    { intValue: long(2n ** 63n - 1n) },
    { doubleValue: -0 },
    { doubleValue: 1.5e-300 },
    { doubleValue: NaN },
    { doubleValue: Infinity },
    { doubleValue: -Infinity },
    { bytesValue: Buffer.from([0, 255, 128, 7]) },
    { bytesValue: Buffer.alloc(0) },
    { arrayValue: { values: [{ stringValue: 'x' }, {}, { arrayValue: { values: [] } }, { kvlistValue: { values: [{ key: 'k', value: { intValue: long(5n) } }] } }] } },
    { kvlistValue: { values: [{ key: 'a', value: { stringValue: '1' } }, { key: 'a', value: { stringValue: '2' } }, { key: '', value: {} }, { key: '__proto__', value: { stringValue: 'p' } }, { key: '10' }, { key: '2' }] } },
    { stringValueStrindex: 3 },
    {},
  ];
  const attributes = values.map((value, i) => ({ key: `k${i}`, value }));
  const span = (spanId: string, overrides: object = {}) => ({
    traceId: Buffer.from('0af7651916cd43dd8448eb211c80319c', 'hex'),
    spanId: Buffer.from(spanId, 'hex'),
    traceState: 'vendor=x',
    parentSpanId: Buffer.from('b7ad6b7169203331', 'hex'),
    flags: 0x301,
    name: 'span ✓',
    kind: 5,
    startTimeUnixNano: unsigned(1_700_000_000_123_456_789n),
    endTimeUnixNano: unsigned(2n ** 64n - 1n),
    attributes,
    droppedAttributesCount: 3,
    events: [
      { timeUnixNano: unsigned(999n), name: 'exception', attributes: [{ key: 'exception.message', value: { stringValue: 'boom' } }], droppedAttributesCount: 1 },
      { name: 'no time' },
    ],
    droppedEventsCount: 4,
    links: [{ traceId: Buffer.alloc(16, 1), spanId: Buffer.alloc(8, 2), traceState: 'a=b', attributes, droppedAttributesCount: 2, flags: 0x100 }],
    droppedLinksCount: 5,
    status: { code: 2, message: 'failed ✗' },
    ...overrides,
  });
  return Buffer.from(
    Request.encode({
      resourceSpans: [
        {
          resource: { attributes, droppedAttributesCount: 1, entityRefs: [{ schemaUrl: 'https://x', type: 'service', idKeys: ['service.name'], descriptionKeys: ['a', 'b'] }] },
          scopeSpans: [
            { scope: { name: 'scope', version: '1.0', attributes, droppedAttributesCount: 6 }, spans: [span('00f067aa0ba902b7'), span('00f067aa0ba902b8', { kind: -1, status: {} })], schemaUrl: 'https://scope' },
            { spans: [{}] },
            {},
          ],
          schemaUrl: 'https://resource',
        },
        {},
      ],
    }).finish(),
  );
}

export const seeds: (readonly [string, Buffer])[] = [...fixtures, ['an SDK export', sdkExport()], ['every field', everyFieldExport()]];
