import { opentelemetry } from '../../../devkit/generated/otlp-trace.js';
import * as rules from '../../../lambda/ingest/core/validation/trace-rules.js';
import { createHarness, type Harness, publishedRecords } from '../../support/ingest-harness.js';
import { gatewayEvent, NOW_MICROS } from '../../../devkit/builders/trace-builders.js';

// Counts validations: every validation of a candidate runs the trace rules exactly once.
jest.mock('../../../lambda/ingest/core/validation/trace-rules.js', () => {
  const actual = jest.requireActual<typeof import('../../../lambda/ingest/core/validation/trace-rules.js')>('../../../lambda/ingest/core/validation/trace-rules.js');
  return { ...actual, checkTraceRules: jest.fn(actual.checkTraceRules) };
});
const checkTraceRules = rules.checkTraceRules as jest.MockedFunction<typeof rules.checkTraceRules>;

const Request = opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
const Response = opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
type SpanProps = opentelemetry.proto.trace.v1.Span.$Properties;
type KeyValue = opentelemetry.proto.common.v1.KeyValue.$Properties;
type AnyValueProps = opentelemetry.proto.common.v1.AnyValue.$Properties;

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const nowNanos = BigInt(NOW_MICROS) * 1000n;
const hex = (text: string) => Uint8Array.from(Buffer.from(text, 'hex'));
const nanos = (secondsAgo: number) => (nowNanos - BigInt(secondsAgo) * 1_000_000_000n).toString() as unknown as SpanProps['startTimeUnixNano'];
const text = (key: string, value: string): KeyValue => ({ key, value: { stringValue: value } });

function span(id: number, overrides: Partial<SpanProps> = {}): SpanProps {
  return {
    traceId: hex(TRACE),
    spanId: hex(id.toString(16).padStart(16, '0')),
    parentSpanId: id === 1 ? undefined : hex('0000000000000001'),
    name: `span-${id}`,
    kind: 3,
    startTimeUnixNano: nanos(10 - id),
    endTimeUnixNano: nanos(9 - id),
    attributes: [
      text('gen_ai.operation.name', 'chat'),
      text('gen_ai.input.messages', JSON.stringify([{ role: 'user', content: `question ${id}` }])),
      { key: 'gen_ai.usage.input_tokens', value: { intValue: 10 as unknown as AnyValueProps['intValue'] } },
      text('app.step', `step-${id}`),
    ],
    ...overrides,
  };
}

function exportOf(spans: SpanProps[], resource: KeyValue[] = []): Buffer {
  return Buffer.from(Request.encode({ resourceSpans: [{ resource: { attributes: resource }, scopeSpans: [{ spans }] }] }).finish());
}

const protobufEvent = (apiKey: string, body: Buffer) => gatewayEvent({ route: 'otlp', apiKey, headers: { 'Content-Type': 'application/x-protobuf' }, body });
const partialSuccess = (body: string) => Response.decode(Buffer.from(body, 'base64')).partialSuccess;

describe('one ingest core behind both routes', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await createHarness();
    checkTraceRules.mockClear();
  });

  it('validates an OTLP trace once, also when one of its spans is invalid (it used to be up to n + 2 times)', async () => {
    const spans = [span(1), span(2), span(3), span(4, { name: 'x'.repeat(2_000) }), span(5)];
    const response = await h.invoke(protobufEvent(h.orgKey, exportOf(spans)));
    expect(response.statusCode).toBe(200);
    expect(checkTraceRules).toHaveBeenCalledTimes(1);
    expect(Number(partialSuccess(response.body)?.rejectedSpans)).toBe(1);
    expect(partialSuccess(response.body)?.errorMessage).toMatch(/span 0000000000000004 of trace 0af7.*: \/name too_long/);
    const [record] = publishedRecords();
    expect(record?.trace.spans.map((s) => s.name)).toEqual(['span-1', 'span-2', 'span-3', 'span-5']);
  });

  it('validates a JSON trace once', async () => {
    const body = JSON.stringify({ traces: [{ timestamp: new Date(NOW_MICROS / 1000).toISOString(), spans: [{ timestamp: new Date(NOW_MICROS / 1000).toISOString(), name: 'a' }] }] });
    const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body }));
    expect(response.statusCode).toBe(200);
    expect(checkTraceRules).toHaveBeenCalledTimes(1);
  });

  it('parses none of the JSON texts of an OTLP export: attributes, input and output', async () => {
    const parse = jest.spyOn(JSON, 'parse');
    try {
      const response = await h.invoke(protobufEvent(h.orgKey, exportOf([span(1), span(2)], [text('service.name', 'agent')])));
      expect(response.statusCode).toBe(200);
      const parsed = new Set(parse.mock.calls.map(([argument]) => argument));
      const [record] = publishedRecords();
      const written = [record!.trace.attributes, ...record!.trace.spans.flatMap((s) => [s.attributes])];
      expect(written.filter((t) => parsed.has(t))).toEqual([]);
      // The message list is JSON text the route has as sent: one scan tells it is JSON, nothing parses it.
      const input = record!.trace.spans[0]!.input;
      expect(input).toMatch(/^\[\{"role":"user"/);
      expect(parse.mock.calls.filter(([argument]) => argument === input)).toEqual([]);
    } finally {
      parse.mockRestore();
    }
  });

  it('lands the trace row of an OTLP trace whose root span alone is invalid, its row built from the export as sent', async () => {
    const badRoot = span(1, { attributes: [text('gen_ai.operation.name', 'invoke_agent'), text('gen_ai.input.messages', '[['.repeat(200))] });
    const response = await h.invoke(protobufEvent(h.orgKey, exportOf([badRoot, span(2)])));
    expect(response.statusCode).toBe(200);
    expect(partialSuccess(response.body)?.errorMessage).toMatch(/span 0000000000000001 .*\/input too_deep/);
    const [record] = publishedRecords();
    expect(record?.context.spans_only).toBeUndefined();
    expect(record?.trace.root_span_name).toBe('span-1');
    expect(record?.trace.spans.map((s) => s.name)).toEqual(['span-2']);
  });

  it('keeps a resource `tags` that is not a list of strings apart instead of rejecting every trace of the export', async () => {
    const tags: KeyValue = { key: 'tags', value: { intValue: 7 as unknown as AnyValueProps['intValue'] } };
    const response = await h.invoke(protobufEvent(h.orgKey, exportOf([span(1)], [tags])));
    expect(response.statusCode).toBe(200);
    expect(partialSuccess(response.body)).toBeFalsy();
    const [record] = publishedRecords();
    expect(JSON.parse(record!.trace.attributes)).toMatchObject({ 'otel.attribute.tags': 7 });
    expect(JSON.parse(record!.trace.spans[0]!.attributes)).toMatchObject({ 'otel.attribute.tags': 7 });
  });
});

describe('what the routes know is trusted no further than it holds', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await createHarness();
  });
  const iso = (micros: number) => new Date(micros / 1000).toISOString();
  const traceJson = (extra: string) => `{"timestamp":"${iso(NOW_MICROS)}","spans":[{"timestamp":"${iso(NOW_MICROS)}","name":"a"}]${extra}}`;

  it('refuses a tag that spells its lone surrogate with escaped escapes (\\u005cud800 inside attributes)', async () => {
    const body = `{"traces":[${traceJson(',"attributes":"{\\"tags\\":[\\"\\u005cud800\\"]}"')}]}`;
    const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: Buffer.from(body) }));
    expect(JSON.parse(response.body)).toMatchObject({ accepted: 0, errors: [{ issues: [{ path: '/attributes', code: 'lone_surrogate' }] }] });
  });

  it('refuses a raw lone surrogate in a plain-text body, which no strict UTF-8 decoding has checked', async () => {
    const body = `{"traces":[${traceJson(`,"environment":"x${String.fromCharCode(0xd800)}"`)}]}`;
    const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body }));
    expect(JSON.parse(response.body)).toMatchObject({ accepted: 0, errors: [{ issues: [{ path: '/environment', code: 'lone_surrogate' }] }] });
  });

  it('keeps the other spans of a rootless OTLP trace when one of them starts at 0', async () => {
    const spans = [span(2, { startTimeUnixNano: 0 as unknown as SpanProps['startTimeUnixNano'] }), span(3)];
    const response = await h.invoke(protobufEvent(h.orgKey, exportOf(spans)));
    expect(response.statusCode).toBe(200);
    expect(Number(partialSuccess(response.body)?.rejectedSpans)).toBe(1);
    const [record] = publishedRecords();
    expect(record?.context.spans_only).toBe(true);
    expect(record?.trace.spans.map((s) => s.name)).toEqual(['span-3']);
  });
});
