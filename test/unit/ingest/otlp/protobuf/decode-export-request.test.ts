import { context, SpanKind, SpanStatusCode, trace as traceApi } from '@opentelemetry/api';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import Long from 'long';
import { opentelemetry } from '../../../../../devkit/generated/otlp-trace.js';
import { MAX_VALUE_DEPTH, type OtlpExport, type OtlpSpan, VALUE_TOO_DEEP } from '../../../../../lambda/ingest/otlp/otlp-model.js';
import { decodeExportRequestJson } from '../../../../../lambda/ingest/otlp/otlp-json.js';
import { decodeExportRequest } from '../../../../../lambda/ingest/otlp/protobuf/decode-export-request.js';
import { UndecodableRequestError } from '../../../../../lambda/ingest/otlp/protobuf/undecodable-request-error.js';
import { WireReader } from '../../../../../lambda/ingest/otlp/protobuf/wire-reader.js';
import { MAX_JSON_CONTAINERS } from '../../../../../lambda/shared/domain/json-limits.js';
import { loadOtlpFixture, RECORDED_AT_NANOS } from '../../../../fixtures/otlp/load-fixture.js';
import { decodeWithProtobufjs } from '../../../../support/protobufjs-export-decoder.js';
import { doubleField, fixed32Field, fixed64Field, group, len, nestedArrays, nestedKvlists, otlp, tag, varint, varintField, WIRE } from '../../../../support/protobuf-bytes.js';

const Request = opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

type Outcome = { ok: true; decoded: OtlpExport } | { ok: false; message: string };

function attempt(decode: (bytes: Buffer) => OtlpExport, bytes: Buffer): Outcome {
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
function disagreement(bytes: Buffer): string | undefined {
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
function decodeAgreeing(bytes: Buffer): Outcome {
  expect(disagreement(bytes)).toBeUndefined();
  return attempt(decodeExportRequest, bytes);
}

function decodedSpan(bytes: Buffer): OtlpSpan {
  const outcome = decodeAgreeing(bytes);
  if (!outcome.ok) throw new Error(`refused: ${outcome.message}`);
  const span = outcome.decoded.resourceSpans[0]?.scopeSpans[0]?.spans[0];
  if (!span) throw new Error('no span decoded');
  return span;
}

const refusal = (bytes: Buffer): string => {
  const outcome = decodeAgreeing(bytes);
  if (outcome.ok) throw new Error('accepted');
  return outcome.message;
};

/** The value of the one attribute of the one span. */
const attributeValue = (value?: Buffer): unknown => decodedSpan(otlp.oneSpan(otlp.attribute('a', value))).attributes.a;

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

const fixtures = ['genai-current', 'genai-legacy', 'openinference'].map((name) => [name, protobufOfJson(loadOtlpFixture(name, RECORDED_AT_NANOS))] as const);

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
function everyFieldExport(): Buffer {
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

const seeds: (readonly [string, Buffer])[] = [...fixtures, ['an SDK export', sdkExport()], ['every field', everyFieldExport()]];

// ---------------------------------------------------------------------------------------------------------------

describe('the hand-written protobuf decoder against the protobufjs-generated one', () => {
  it.each(seeds)('decodes %s alike', (_, bytes) => {
    const outcome = decodeAgreeing(bytes);
    expect(outcome.ok).toBe(true);
  });

  it('decodes the fixtures to what their OTLP/JSON decodes to', () => {
    for (const [name, bytes] of fixtures) {
      const json = decodeExportRequestJson(loadOtlpFixture(name, RECORDED_AT_NANOS));
      expect({ ...decodeExportRequest(bytes), wellFormedText: json.wellFormedText }).toEqual(json);
    }
  });

  it('decodes every prefix of an export alike (truncation anywhere)', () => {
    const bytes = everyFieldExport();
    const problems: string[] = [];
    for (let end = 0; end <= bytes.length; end++) {
      const problem = disagreement(bytes.subarray(0, end));
      if (problem) problems.push(`prefix ${end}: ${problem}`);
      if (problems.length === 3) break;
    }
    expect(problems).toEqual([]);
  });

  it('decodes seeded random mutations alike: byte flips, insertions, deletions, copies, truncations', () => {
    let state = 0x9e3779b9;
    // mulberry32: the same mutations on every run
    const random = (): number => {
      state = (state + 0x6d2b79f5) | 0;
      let t = Math.imul(state ^ (state >>> 15), 1 | state);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const below = (n: number) => Math.floor(random() * n);
    const interesting = [0x00, 0x01, 0x7f, 0x80, 0xff, 0x0b, 0x0c, 0x0e, 0x0f, 0x0a, 0x12, 0x2a, 0x32, 0xc0, 0xed, 0xf4];
    const mutate = (input: Buffer): Buffer => {
      let bytes = Buffer.from(input);
      for (let n = 1 + below(3); n > 0; n--) {
        const at = below(bytes.length + 1);
        switch (below(7)) {
          case 0:
            if (at < bytes.length) bytes[at] = bytes[at]! ^ (1 << below(8));
            break;
          case 1:
            if (at < bytes.length) bytes[at] = interesting[below(interesting.length)]!;
            break;
          case 2:
            bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from(Array.from({ length: 1 + below(4) }, () => below(256))), bytes.subarray(at)]);
            break;
          case 3:
            bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(Math.min(bytes.length, at + 1 + below(8)))]);
            break;
          case 4: {
            const from = below(bytes.length);
            bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(from, from + 1 + below(40)), bytes.subarray(at)]);
            break;
          }
          case 5:
            bytes = bytes.subarray(0, at);
            break;
          default:
            if (at < bytes.length) bytes[at] = below(256);
        }
      }
      return bytes;
    };
    const problems: string[] = [];
    let accepted = 0;
    const mutants = 4_000;
    for (let i = 0; i < mutants; i++) {
      const [, seed] = seeds[i % seeds.length]!;
      const bytes = mutate(seed);
      const problem = disagreement(bytes);
      if (problem) problems.push(problem);
      else if (attempt(decodeExportRequest, bytes).ok) accepted++;
      if (problems.length === 3) break; // enough to tell; a mutation run pays for every mutation left
    }
    expect(problems).toEqual([]);
    // Both outcomes are exercised, not only refusals.
    expect(accepted).toBeGreaterThan(mutants / 10);
    expect(accepted).toBeLessThan(mutants - mutants / 10);
  });
});

describe('unknown fields are skipped, as protobuf requires', () => {
  const unknowns: [string, Buffer][] = [
    ['a varint', varintField(1000, 12345)],
    ['a varint longer than 10 bytes', Buffer.concat([tag(1000, WIRE.varint), Buffer.alloc(14, 0x80), Buffer.from([0x01])])],
    ['a fixed64', fixed64Field(1000, 5n)],
    ['a length-delimited field', len(1000, 'abc')],
    ['a group holding fields and a group', group(1000, varintField(1, 1), len(2, 'x'), group(3, fixed32Field(4, 1)), fixed64Field(5, 1n))],
    ['a fixed32', fixed32Field(1000, 7)],
  ];
  // Where each message's fields go: the unknown field is appended to the message's own fields.
  const places: [string, (extra: Buffer) => Buffer][] = [
    ['the request', (extra) => Buffer.concat([otlp.oneSpan(), extra])],
    ['a ResourceSpans', (extra) => otlp.request(Buffer.concat([otlp.scopeSpans(otlp.span()), extra]))],
    ['a Resource', (extra) => otlp.request(otlp.resource(len(1, otlp.keyValue('a', otlp.string('b'))), extra))],
    ['an EntityRef', (extra) => otlp.request(otlp.resource(len(3, len(2, 'service'), extra)))],
    ['a ScopeSpans', (extra) => otlp.request(otlp.scopeSpans(otlp.span(), extra))],
    ['an InstrumentationScope', (extra) => otlp.request(otlp.scopeSpans(otlp.scope(len(1, 'name'), extra)))],
    ['a Span', (extra) => otlp.oneSpan(len(5, 'name'), extra)],
    ['an Event', (extra) => otlp.oneSpan(len(11, len(2, 'event'), extra))],
    ['a Link', (extra) => otlp.oneSpan(len(13, len(3, 'a=b'), extra))],
    ['a Status', (extra) => otlp.oneSpan(len(15, varintField(3, 2), extra))],
    ['a Status, as its reserved field 1', (extra) => otlp.oneSpan(len(15, varintField(3, 2), extra.length > 0 ? len(1, 'x') : extra))],
    ['a KeyValue', (extra) => otlp.oneSpan(len(9, len(1, 'a'), len(2, otlp.string('b')), extra))],
    ['an AnyValue', (extra) => otlp.oneSpan(otlp.attribute('a', Buffer.concat([otlp.string('b'), extra])))],
    ['an ArrayValue', (extra) => otlp.oneSpan(otlp.attribute('a', len(5, len(1, otlp.string('b')), extra)))],
    ['a KeyValueList', (extra) => otlp.oneSpan(otlp.attribute('a', len(6, len(1, otlp.keyValue('k', otlp.string('b'))), extra)))],
  ];

  it.each(places)('in %s, of every wire type', (_, place) => {
    const plain = attempt(decodeExportRequest, place(Buffer.alloc(0)));
    expect(plain.ok).toBe(true);
    for (const [, unknown] of unknowns) {
      const outcome = decodeAgreeing(place(unknown));
      expect(outcome).toEqual(plain);
    }
  });

  it.each([
    ['a group whose end tag names another field', group(1000, varintField(1, 1)).subarray(0, -2), tag(1001, WIRE.groupEnd)],
    ['a group that never ends', Buffer.concat([tag(1000, WIRE.groupStart), varintField(1, 1)]), Buffer.alloc(0)],
    ['an end-group tag without a group', tag(1000, WIRE.groupEnd), Buffer.alloc(0)],
    ['field number 0', varintField(0, 1), Buffer.alloc(0)],
    ['field number 0 inside a group', Buffer.concat([tag(1000, WIRE.groupStart), varintField(0, 1)]), tag(1000, WIRE.groupEnd)],
    ['wire type 6', Buffer.concat([tag(1000, 6), Buffer.from([1])]), Buffer.alloc(0)],
    ['wire type 7', Buffer.concat([tag(1000, 7), Buffer.from([1])]), Buffer.alloc(0)],
    ['a skipped varint that never ends', Buffer.concat([tag(1000, WIRE.varint), Buffer.alloc(20, 0xff)]), Buffer.alloc(0)],
    ['a skipped fixed64 cut short', Buffer.concat([tag(1000, WIRE.i64), Buffer.alloc(7)]), Buffer.alloc(0)],
    ['a skipped fixed32 cut short', Buffer.concat([tag(1000, WIRE.i32), Buffer.alloc(3)]), Buffer.alloc(0)],
  ])('but %s is refused', (_, unknown, after) => {
    // Inside a span, so the skipping happens within a message's bounds.
    expect(refusal(otlp.oneSpan(len(5, 'name'), unknown, after))).toMatch(/^not a valid protobuf ExportTraceServiceRequest/);
  });
});

describe('a known field sent with another wire type is refused', () => {
  // Every known field of every message, with the wire type it must have.
  const messages: [string, number[][], (field: Buffer) => Buffer][] = [
    ['ExportTraceServiceRequest', [[1, WIRE.len]], (field) => field],
    ['ResourceSpans', [[1, WIRE.len], [2, WIRE.len], [3, WIRE.len]], (field) => otlp.request(field)],
    ['Resource', [[1, WIRE.len], [2, WIRE.varint], [3, WIRE.len]], (field) => otlp.request(otlp.resource(field))],
    ['EntityRef', [[1, WIRE.len], [2, WIRE.len], [3, WIRE.len], [4, WIRE.len]], (field) => otlp.request(otlp.resource(len(3, field)))],
    ['ScopeSpans', [[1, WIRE.len], [2, WIRE.len], [3, WIRE.len]], (field) => otlp.request(otlp.scopeSpans(field))],
    ['InstrumentationScope', [[1, WIRE.len], [2, WIRE.len], [3, WIRE.len], [4, WIRE.varint]], (field) => otlp.request(otlp.scopeSpans(otlp.scope(field)))],
    ['Span', [[1, WIRE.len], [2, WIRE.len], [3, WIRE.len], [4, WIRE.len], [5, WIRE.len], [6, WIRE.varint], [7, WIRE.i64], [8, WIRE.i64], [9, WIRE.len], [10, WIRE.varint], [11, WIRE.len], [12, WIRE.varint], [13, WIRE.len], [14, WIRE.varint], [15, WIRE.len], [16, WIRE.i32]], (field) => otlp.oneSpan(field)],
    ['Event', [[1, WIRE.i64], [2, WIRE.len], [3, WIRE.len], [4, WIRE.varint]], (field) => otlp.oneSpan(len(11, field))],
    ['Link', [[1, WIRE.len], [2, WIRE.len], [3, WIRE.len], [4, WIRE.len], [5, WIRE.varint], [6, WIRE.i32]], (field) => otlp.oneSpan(len(13, field))],
    ['Status', [[2, WIRE.len], [3, WIRE.varint]], (field) => otlp.oneSpan(len(15, field))],
    ['KeyValue', [[1, WIRE.len], [2, WIRE.len], [3, WIRE.varint]], (field) => otlp.oneSpan(len(9, field))],
    ['AnyValue', [[1, WIRE.len], [2, WIRE.varint], [3, WIRE.varint], [4, WIRE.i64], [5, WIRE.len], [6, WIRE.len], [7, WIRE.len], [8, WIRE.varint]], (field) => otlp.oneSpan(otlp.attribute('a', field))],
    ['ArrayValue', [[1, WIRE.len]], (field) => otlp.oneSpan(otlp.attribute('a', len(5, field)))],
    ['KeyValueList', [[1, WIRE.len]], (field) => otlp.oneSpan(otlp.attribute('a', len(6, field)))],
  ];
  const asWireType = (field: number, wireType: number): Buffer => {
    switch (wireType) {
      case WIRE.varint:
        return varintField(field, 1);
      case WIRE.i64:
        return fixed64Field(field, 1n);
      case WIRE.len:
        return len(field, '');
      case WIRE.groupStart:
        return group(field);
      default:
        return fixed32Field(field, 1);
    }
  };

  it.each(messages)('in %s, naming the field and both wire types', (_, fields, place) => {
    for (const [field, expected] of fields as [number, number][]) {
      expect(decodeAgreeing(place(asWireType(field, expected))).ok).toBe(true);
      for (const wireType of [WIRE.varint, WIRE.i64, WIRE.len, WIRE.groupStart, WIRE.i32].filter((type) => type !== expected)) {
        expect(refusal(place(asWireType(field, wireType)))).toBe(`not a valid protobuf ExportTraceServiceRequest (field ${field} has wire type ${wireType}, expected ${expected})`);
      }
    }
  });
});

describe('malformed wire data is refused', () => {
  it.each([
    ['a length past the end', Buffer.from([0x0a, 0x7f, 0x0a])],
    ['a length past its message', otlp.request(Buffer.concat([tag(2, WIRE.len), varint(100), otlp.span()]))],
    ['a length of 2^31', Buffer.from([0x0a, 0x80, 0x80, 0x80, 0x80, 0x08])],
    // Read to 32 bits, these would be a length of 0 and field 1000 as a varint.
    ['a length whose fifth byte is 16', Buffer.from([0x0a, 0x80, 0x80, 0x80, 0x80, 0x10])],
    ['a tag of six bytes', Buffer.from([0xc0, 0xbe, 0x80, 0x80, 0x80, 0x01])],
    ['a tag whose fifth byte is 16', Buffer.from([0xc0, 0xbe, 0x80, 0x80, 0x10, 0x01])],
    ['a tag cut short', Buffer.from([0x88])],
    ['a span kind of 11 varint bytes', otlp.oneSpan(tag(6, WIRE.varint), Buffer.alloc(10, 0x81), Buffer.from([0x01]))],
    ['an int value of 11 varint bytes', otlp.oneSpan(otlp.attribute('a', Buffer.concat([tag(3, WIRE.varint), Buffer.alloc(10, 0x81), Buffer.from([0x01])])))],
    ['a bool value of 11 varint bytes', otlp.oneSpan(otlp.attribute('a', Buffer.concat([tag(2, WIRE.varint), Buffer.alloc(10, 0x80), Buffer.from([0x01])])))],
    ['a varint running past its message', otlp.oneSpan(Buffer.concat([tag(6, WIRE.varint), Buffer.from([0x81])]))],
    ['a time cut short', otlp.oneSpan(fixed64Field(7, 1n).subarray(0, 8))],
    ['a double cut short', otlp.oneSpan(otlp.attribute('a', doubleField(4, 1).subarray(0, 6)))],
    ['a fixed32 cut short', otlp.oneSpan(fixed32Field(16, 1).subarray(0, 5))],
  ])('%s', (_, bytes) => {
    expect(refusal(bytes)).toMatch(/^not a valid protobuf ExportTraceServiceRequest \(/);
  });

  it('accepts 10-byte varints, a length of five bytes and a five-byte tag', () => {
    expect(decodedSpan(otlp.oneSpan(varintField(6, -1n))).kind).toBe(-1);
    expect(decodedSpan(otlp.oneSpan(Buffer.concat([tag(5, WIRE.len), Buffer.from([0x84, 0x80, 0x80, 0x80, 0x00]), Buffer.from('name')]))).name).toBe('name');
    expect(decodeAgreeing(Buffer.concat([Buffer.from([0xc0, 0xbe, 0x80, 0x80, 0x00]), varint(1)])).ok).toBe(true); // field 1000, five bytes
  });
});

describe('strings must be UTF-8', () => {
  const invalid: [string, number[]][] = [
    ['a lone continuation byte', [0x61, 0x80]],
    ['an overlong encoding', [0xc0, 0x80]],
    ['an encoded surrogate', [0xed, 0xa0, 0x80]],
    ['a code point past U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
    ['a sequence cut short', [0xe2, 0x82]],
    ['0xff', [0xff]],
  ];
  const places: [string, (text: Buffer) => Buffer][] = [
    ['an attribute key', (text) => otlp.oneSpan(otlp.attribute(text, otlp.string('v')))],
    ['a string value', (text) => otlp.oneSpan(otlp.attribute('a', otlp.string(text)))],
    ['a nested string value', (text) => otlp.oneSpan(otlp.attribute('a', otlp.array(otlp.string(text))))],
    ['a span name', (text) => otlp.oneSpan(len(5, text))],
    ['a trace state', (text) => otlp.oneSpan(len(3, text))],
    ['a status message', (text) => otlp.oneSpan(len(15, len(2, text)))],
    ['an event name', (text) => otlp.oneSpan(len(11, len(2, text)))],
    ['a link trace state', (text) => otlp.oneSpan(len(13, len(3, text)))],
    ['a link attribute', (text) => otlp.oneSpan(len(13, len(4, otlp.keyValue('k', otlp.string(text)))))],
    ['a scope name', (text) => otlp.request(otlp.scopeSpans(otlp.scope(len(1, text))))],
    ['a scope attribute', (text) => otlp.request(otlp.scopeSpans(otlp.scope(len(3, otlp.keyValue(text)))))],
    ['a resource attribute', (text) => otlp.request(otlp.resource(len(1, otlp.keyValue('k', otlp.string(text)))))],
    ['a resource schema URL', (text) => otlp.request(len(3, text))],
    ['an entity ref key', (text) => otlp.request(otlp.resource(len(3, len(3, text))))],
  ];

  it.each(places)('in %s', (_, place) => {
    for (const [, bytes] of invalid) {
      for (const padding of ['', 'x'.repeat(70)]) {
        expect(refusal(place(Buffer.concat([Buffer.from(padding), Buffer.from(bytes)])))).toMatch(/UTF-8|utf-8|encoded data was not valid/i);
      }
    }
    expect(decodeAgreeing(place(Buffer.from('\uFEFFok ünïcode \uFFFD ✓ 🚀'))).ok).toBe(true);
  });

  it('as strictly as a fatal TextDecoder, over every 1- and 2-byte string and a sample of longer ones', () => {
    // A WHATWG decoder turns each invalid sequence into U+FFFD: bytes are UTF-8 exactly when their text encodes
    // back to them (as a fatal TextDecoder decides, without an exception per invalid sample).
    const lenient = new TextDecoder('utf-8', { ignoreBOM: true });
    const expected = (bytes: Buffer): string | undefined => {
      const text = lenient.decode(bytes);
      return Buffer.from(text, 'utf8').equals(bytes) ? text : undefined;
    };
    const samples: Buffer[] = [];
    for (let a = 0; a < 256; a++) {
      samples.push(Buffer.from([a]));
      for (let b = 0; b < 256; b++) samples.push(Buffer.from([a, b]));
    }
    let state = 7;
    const byte = () => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return state >>> 24;
    };
    for (let i = 0; i < 60_000; i++) {
      const lead = 0xc0 + (byte() % 0x40);
      samples.push(Buffer.from([lead, 0x80 + (byte() % 0x50), byte(), ...(i % 2 ? [0x80 + (byte() % 0x40)] : [])]));
    }
    // Each read again after 47 ASCII bytes, past the cache of short strings. One reader reads them all, one after
    // another (a refused string leaves the reader after it): a decode per sample made this test take 17 s of a
    // loaded run, and a mutation run repeats it for every mutant it covers.
    const padding = Buffer.from('x'.repeat(47));
    const texts = [...samples, ...samples.map((bytes) => Buffer.concat([padding, bytes]))];
    const body = Buffer.concat(texts.flatMap((bytes) => [varint(bytes.length), bytes]));
    const reader = new WireReader(body);
    const wrong: string[] = [];
    // Half the samples are refused: without the stack of each refusal, the loop takes a third of the time.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      for (const bytes of texts) {
        let text: string | undefined;
        try {
          text = reader.readString(body.length);
        } catch (error) {
          if (!(error instanceof UndecodableRequestError)) throw error;
          text = undefined;
        }
        if (text !== expected(bytes)) wrong.push(bytes.toString('hex'));
        if (wrong.length === 10) break;
      }
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
    expect(wrong).toEqual([]);
    expect(reader.pos).toBe(body.length);
  });
});

describe('nesting', () => {
  /** The deepest `build(depth)` the protobufjs decoder accepts. */
  function deepestAccepted(build: (depth: number) => Buffer): number {
    let depth = 1;
    while (attempt(decodeWithProtobufjs, build(depth + 1)).ok) depth++;
    return depth;
  }

  it.each([
    ['arrays in a span attribute', (depth: number) => otlp.oneSpan(otlp.attribute('a', nestedArrays(depth)))],
    ['key-value lists in an event attribute', (depth: number) => otlp.oneSpan(len(11, len(3, otlp.keyValue('a', nestedKvlists(depth)))))],
    ['arrays in a resource attribute', (depth: number) => otlp.request(otlp.resource(len(1, otlp.keyValue('a', nestedArrays(depth)))))],
    ['arrays in a scope attribute (read, not kept)', (depth: number) => otlp.request(otlp.scopeSpans(otlp.scope(len(3, otlp.keyValue('a', nestedArrays(depth))))))],
    ['key-value lists in a link attribute (read, not kept)', (depth: number) => otlp.oneSpan(len(13, len(4, otlp.keyValue('a', nestedKvlists(depth)))))],
    ['groups in an unknown span field', (depth: number) => otlp.oneSpan(Array.from({ length: depth }).reduce<Buffer>((inner) => group(1000, inner), varintField(1, 1)))],
    ['groups in an unknown AnyValue field', (depth: number) => otlp.oneSpan(otlp.attribute('a', Array.from({ length: depth }).reduce<Buffer>((inner) => group(1000, inner), varintField(1, 1))))],
  ])('of %s is refused past the recursion limit, exactly where protobufjs stops', (_, build) => {
    const deepest = deepestAccepted(build);
    expect(deepest).toBeGreaterThan(10);
    expect(decodeAgreeing(build(deepest)).ok).toBe(true);
    expect(refusal(build(deepest + 1))).toMatch(/max depth exceeded/);
  });

  it(`makes a span's problem, not a refusal, past ${MAX_VALUE_DEPTH} arrays or key-value lists`, () => {
    const withAttribute = (value: Buffer) => decodedSpan(otlp.oneSpan(otlp.attribute('deep', value), otlp.attribute('other', otlp.string('kept'))));
    const deepest = withAttribute(nestedArrays(MAX_VALUE_DEPTH - 1));
    expect(deepest.problem).toBeUndefined();
    expect(JSON.stringify(deepest.attributes.deep)).toBe(`${'['.repeat(MAX_VALUE_DEPTH - 1)}"leaf"${']'.repeat(MAX_VALUE_DEPTH - 1)}`);
    // Lists nest three messages a level, so the deepest list past the limit that protobufjs accepts is an empty one.
    const emptyList = len(6);
    for (const tooDeep of [withAttribute(nestedArrays(MAX_VALUE_DEPTH)), withAttribute(nestedKvlists(MAX_VALUE_DEPTH - 1, emptyList))]) {
      expect([tooDeep.problem, tooDeep.attributes]).toEqual([VALUE_TOO_DEEP, {}]);
    }
    expect(withAttribute(nestedKvlists(MAX_VALUE_DEPTH - 2, emptyList))).toMatchObject({ attributes: { other: 'kept' } });
    expect(withAttribute(nestedKvlists(MAX_VALUE_DEPTH - 2, emptyList)).problem).toBeUndefined();
    // An event's attribute: the event keeps no attributes, the span carries the problem.
    const event = decodedSpan(otlp.oneSpan(len(11, len(2, 'e'), len(3, otlp.keyValue('deep', nestedArrays(MAX_VALUE_DEPTH)))), otlp.attribute('own', otlp.string('kept'))));
    expect([event.problem, event.attributes, event.events]).toEqual([VALUE_TOO_DEEP, { own: 'kept' }, [{ name: 'e', timeUnixMicros: 0, attributes: {} }]]);
    // A resource's: its attributes are dropped, its spans are not affected.
    const resource = decodeAgreeing(otlp.request(otlp.resource(len(1, otlp.keyValue('deep', nestedArrays(MAX_VALUE_DEPTH))), len(1, otlp.keyValue('b', otlp.string('c')))), otlp.scopeSpans(otlp.span())));
    expect(resource.ok && resource.decoded.resourceSpans[0]?.resourceAttributes).toEqual({});
    expect(resource.ok && resource.decoded.resourceSpans[0]?.scopeSpans[0]?.spans[0]?.problem).toBeUndefined();
    // A scope's or a link's attributes are not kept, so nothing is too deep there.
    expect(decodedSpan(otlp.oneSpan(len(13, len(4, otlp.keyValue('deep', nestedArrays(MAX_VALUE_DEPTH + 5)))))).problem).toBeUndefined();
  });

  it('judges depth on the value the oneof ends with: a too-deep array replaced by a string is no problem', () => {
    const replaced = Buffer.concat([nestedArrays(MAX_VALUE_DEPTH), otlp.string('last')]);
    expect(decodedSpan(otlp.oneSpan(otlp.attribute('a', replaced)))).toMatchObject({ attributes: { a: 'last' } });
    expect(decodedSpan(otlp.oneSpan(otlp.attribute('a', replaced))).problem).toBeUndefined();
    const inside = otlp.array(Buffer.concat([nestedArrays(MAX_VALUE_DEPTH), otlp.string('inner')]));
    expect(decodedSpan(otlp.oneSpan(otlp.attribute('a', inside))).attributes).toEqual({ a: ['inner'] });
    // A too-deep item stays a problem when its array is continued by a second array_value.
    const continued = Buffer.concat([otlp.array(nestedArrays(MAX_VALUE_DEPTH - 1)), otlp.array(otlp.string('more'))]);
    expect(decodedSpan(otlp.oneSpan(otlp.attribute('a', continued))).problem).toBe(VALUE_TOO_DEEP);
  });
});

describe('field values', () => {
  it('takes the last of an AnyValue oneof, and continues an array or list sent again', () => {
    expect(attributeValue(Buffer.concat([otlp.string('s'), varintField(3, 7)]))).toBe(7);
    expect(attributeValue(Buffer.concat([otlp.array(otlp.string('x')), otlp.string('s')]))).toBe('s');
    expect(attributeValue(Buffer.concat([otlp.array(otlp.string('x')), otlp.array(otlp.string('y'))]))).toEqual(['x', 'y']);
    expect(attributeValue(Buffer.concat([otlp.array(otlp.string('x')), otlp.string('s'), otlp.array(otlp.string('y'))]))).toEqual(['y']);
    expect(attributeValue(Buffer.concat([otlp.kvlist(otlp.keyValue('a', otlp.string('1'))), otlp.kvlist(otlp.keyValue('b', otlp.string('2')), otlp.keyValue('a', otlp.string('3')))]))).toEqual({ a: '3', b: '2' });
    expect(attributeValue(Buffer.concat([otlp.string('s'), varintField(8, 4)]))).toBeNull(); // string_value_strindex
    expect(attributeValue(Buffer.alloc(0))).toBeNull();
    expect(attributeValue()).toBeNull();
  });

  it('merges a KeyValue value sent twice, and lets a later key replace an earlier one', () => {
    const twice = len(9, len(1, 'a'), len(2, otlp.array(otlp.string('x'))), len(2, otlp.array(otlp.string('y'))));
    expect(decodedSpan(otlp.oneSpan(twice)).attributes).toEqual({ a: ['x', 'y'] });
    const keys = decodedSpan(otlp.oneSpan(otlp.attribute('k', otlp.string('1')), otlp.attribute('j', otlp.string('2')), otlp.attribute('k', otlp.string('3'))));
    expect(JSON.stringify(keys.attributes)).toBe('{"k":"3","j":"2"}');
  });

  it('merges singular messages sent twice: resource attributes concatenate, the last scope name, status code and span name win', () => {
    const outcome = decodeAgreeing(
      otlp.request(
        Buffer.concat([
          otlp.resource(len(1, otlp.keyValue('a', otlp.string('1')))),
          otlp.scopeSpans(otlp.scope(len(1, 'first'), len(2, 'v1')), otlp.scope(len(1, 'second')), otlp.span(len(5, 'one'), len(5, 'two'), len(15, varintField(3, 2), len(2, 'bad')), len(15, varintField(3, 0)))),
          otlp.resource(len(1, otlp.keyValue('b', otlp.string('2')))),
        ]),
      ),
    );
    expect(outcome.ok && outcome.decoded.resourceSpans).toEqual([
      {
        resourceAttributes: { a: '1', b: '2' },
        scopeSpans: [{ scopeName: 'second', scopeVersion: 'v1', spans: [expect.objectContaining({ name: 'two', statusCode: 0, statusMessage: 'bad' })] }],
      },
    ]);
  });

  it('gives absent fields their defaults', () => {
    expect(decodedSpan(otlp.oneSpan())).toEqual({
      traceId: '',
      spanId: '',
      parentSpanId: '',
      name: '',
      kind: 0,
      startTimeUnixMicros: 0,
      endTimeUnixMicros: 0,
      statusCode: 0,
      statusMessage: '',
      traceState: '',
      attributes: {},
      events: [],
    });
    expect(decodeAgreeing(Buffer.alloc(0))).toEqual({ ok: true, decoded: { wellFormedText: true, resourceSpans: [] } });
  });

  it('keeps strings and ids apart that share their length and most bytes, or their bytes (as text and as hex)', () => {
    const names = ['abcdefghij', 'aXcdefghij', 'abcXefghij', 'abcdXfghij', 'abcdefXhij', 'abcdefghXj', 'abcdefghij'];
    const spans = names.map((name) => otlp.span(len(1, Buffer.from(name)), len(4, Buffer.from(name)), len(5, name), otlp.attribute(name, otlp.string(name))));
    const outcome = decodeAgreeing(otlp.request(otlp.scopeSpans(...spans)));
    const decoded = outcome.ok ? outcome.decoded.resourceSpans[0]?.scopeSpans[0]?.spans : [];
    expect(decoded?.map((span) => [span.name, span.traceId, span.parentSpanId, span.attributes])).toEqual(
      names.map((name) => [name, Buffer.from(name).toString('hex'), Buffer.from(name).toString('hex'), { [name]: name }]),
    );
  });

  it('reads ids as lower-case hex and bytes values as base64', () => {
    const span = decodedSpan(otlp.oneSpan(len(1, Buffer.from('0AF7651916CD43DD8448EB211C80319C', 'hex')), len(2, Buffer.from([0xb7, 0xad])), len(4, Buffer.alloc(0)), otlp.attribute('b', len(7, Buffer.from([0, 255, 128])))));
    expect(span).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad', parentSpanId: '', attributes: { b: 'AP+A' } });
  });

  it('reads times as whole microseconds, exactly, with far-future ones still far in the future', () => {
    const micros = (nanos: bigint) => decodedSpan(otlp.oneSpan(fixed64Field(7, nanos))).startTimeUnixMicros;
    expect(micros(1_700_000_000_123_456_789n)).toBe(1_700_000_000_123_456);
    expect(micros(999n)).toBe(0);
    expect(micros(2n ** 32n * 1000n - 1n)).toBe(2 ** 32 - 1);
    expect(micros(2n ** 53n * 1000n + 999n)).toBe(2 ** 53);
    expect(micros(2n ** 64n - 1n)).toBe(Number((2n ** 64n - 1n) / 1000n));
    let state = 12345n;
    for (let i = 0; i < 2_000; i++) {
      state = (state * 6364136223846793005n + 1442695040888963407n) % 2n ** 64n;
      const nanos = state >> BigInt(i % 64);
      expect([nanos, micros(nanos)]).toEqual([nanos, Number(nanos / 1000n)]);
    }
    const event = decodedSpan(otlp.oneSpan(len(11, fixed64Field(1, 1_700_000_000_000_001_999n))));
    expect(event.events[0]?.timeUnixMicros).toBe(1_700_000_000_000_001);
  });

  it('reads int64 values as numbers when safe, else as exact decimal strings', () => {
    const int = (value: bigint) => attributeValue(varintField(3, value));
    expect([int(0n), int(1n), int(-1n), int(2n ** 53n - 1n), int(-(2n ** 53n - 1n)), int(300n)]).toEqual([0, 1, -1, 2 ** 53 - 1, -(2 ** 53 - 1), 300]);
    expect([int(2n ** 53n), int(-(2n ** 53n)), int(2n ** 63n - 1n), int(-(2n ** 63n)), int(2n ** 32n + 5n)]).toEqual(['9007199254740992', '-9007199254740992', '9223372036854775807', '-9223372036854775808', 2 ** 32 + 5]);
  });

  it('reads doubles, naming the ones JSON cannot hold, and bools of any varint length', () => {
    const double = (value: number) => attributeValue(doubleField(4, value));
    expect([double(1.5), double(NaN), double(Infinity), double(-Infinity)]).toEqual([1.5, 'NaN', 'Infinity', '-Infinity']);
    expect(Object.is(double(-0), -0)).toBe(true);
    expect(attributeValue(Buffer.concat([tag(2, WIRE.varint), Buffer.from([0x80, 0x00])]))).toBe(false);
    expect(attributeValue(Buffer.concat([tag(2, WIRE.varint), Buffer.from([0x80, 0x01])]))).toBe(true);
  });
});

describe('decodeExportRequest: the arrays and objects a message builds', () => {
  /** One span with one attribute: an array of `count` empty arrays, four bytes each and no bracket byte. */
  const emptyArrays = (count: number) => {
    const empty = otlp.array();
    const items = Buffer.alloc(count * (2 + empty.length));
    for (let i = 0; i < count; i++) Buffer.concat([Buffer.from([0x0a, empty.length]), empty]).copy(items, i * (2 + empty.length));
    return otlp.oneSpan(otlp.attribute('a', Buffer.concat([tag(5, WIRE.len), varint(items.length), items])));
  };

  it('refuses past MAX_JSON_CONTAINERS built, as a JSON body past that many brackets is (issue 27: 1 M empty arrays were decoded)', () => {
    const bomb = emptyArrays(MAX_JSON_CONTAINERS);
    expect(bomb.includes(0x5b) || bomb.includes(0x7b)).toBe(false);
    expect(attempt(decodeExportRequest, bomb)).toEqual({ ok: false, message: expect.stringMatching(/more than 1000000 JSON arrays and objects/) });
  });

  it('counts the brackets of every body that could hold more than MAX_JSON_CONTAINERS: one string of one more', () => {
    const withBrackets = (count: number) => otlp.oneSpan(otlp.attribute('a', otlp.string('['.repeat(count))));
    expect(withBrackets(MAX_JSON_CONTAINERS + 1).length).toBeLessThan(MAX_JSON_CONTAINERS + 64);
    expect(attempt(decodeExportRequest, withBrackets(MAX_JSON_CONTAINERS + 1))).toEqual({ ok: false, message: expect.stringMatching(/more than 1000000 JSON arrays and objects/) });
    // The span is the one container built.
    expect(attempt(decodeExportRequest, withBrackets(MAX_JSON_CONTAINERS)).ok).toBe(false);
    expect(attempt(decodeExportRequest, withBrackets(MAX_JSON_CONTAINERS - 1)).ok).toBe(true);
  });

  it('decodes the same shape below the bound', () => {
    const outcome = attempt(decodeExportRequest, emptyArrays(1_000));
    expect(outcome.ok).toBe(true);
  });
});

