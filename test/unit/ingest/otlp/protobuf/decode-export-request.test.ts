import { MAX_VALUE_DEPTH, VALUE_TOO_DEEP } from '../../../../../lambda/ingest/otlp/otlp-model.js';
import { decodeExportRequestJson } from '../../../../../lambda/ingest/otlp/otlp-json.js';
import { decodeExportRequest } from '../../../../../lambda/ingest/otlp/protobuf/decode-export-request.js';
import { loadOtlpFixture, RECORDED_AT_NANOS } from '../../../../fixtures/otlp/load-fixture.js';
import { attempt, attributeValue, decodeAgreeing, decodedSpan, disagreement, everyFieldExport, fixtures, refusal, seeds } from '../../../../support/otlp-decoder-differential.js';
import { decodeWithProtobufjs } from '../../../../support/protobufjs-export-decoder.js';
import { doubleField, fixed32Field, fixed64Field, group, len, nestedArrays, nestedKvlists, otlp, tag, varint, varintField, WIRE } from '../../../../support/protobuf-bytes.js';

/*
 * The decoder held to the protobufjs-generated one on focused bodies: each field, wire type, merge rule and limit.
 * The large and random sweeps (fuzzed bodies, every short UTF-8 string, a million containers) are in
 * decode-export-request.sweeps.test.ts: a mutation run (docs/mutation.md) runs these focused tests for each mutant.
 */

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
    // Values read only for their validity: a scope's and a link's attributes.
    ['an AnyValue read only for its validity', (extra) => otlp.request(otlp.scopeSpans(otlp.scope(len(3, otlp.keyValue('k', Buffer.concat([otlp.string('b'), extra]))))))],
    ['a KeyValue read only for its validity', (extra) => otlp.oneSpan(len(13, len(4, len(1, 'k'), len(2, otlp.string('b')), extra)))],
    ['an ArrayValue read only for its validity', (extra) => otlp.oneSpan(len(13, len(4, otlp.keyValue('k', len(5, len(1, otlp.string('b')), extra)))))],
    ['a KeyValueList read only for its validity', (extra) => otlp.request(otlp.scopeSpans(otlp.scope(len(3, otlp.keyValue('k', len(6, len(1, otlp.keyValue('j', otlp.string('b'))), extra))))))],
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
    // A scope's and a link's attributes are read for their validity only, by other code than the kept ones'.
    ['KeyValue, a scope attribute', [[1, WIRE.len], [2, WIRE.len], [3, WIRE.varint]], (field) => otlp.request(otlp.scopeSpans(otlp.scope(len(3, field))))],
    ['KeyValue, a link attribute', [[1, WIRE.len], [2, WIRE.len], [3, WIRE.varint]], (field) => otlp.oneSpan(len(13, len(4, field)))],
    ['AnyValue, a link attribute', [[1, WIRE.len], [2, WIRE.varint], [3, WIRE.varint], [4, WIRE.i64], [5, WIRE.len], [6, WIRE.len], [7, WIRE.len], [8, WIRE.varint]], (field) => otlp.oneSpan(len(13, len(4, otlp.keyValue('a', field))))],
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
    // 2,000 random times: wire-reader.test.ts (readMicros).
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

