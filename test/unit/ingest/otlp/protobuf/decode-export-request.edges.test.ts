import type { OtlpExport } from '../../../../../lambda/ingest/otlp/otlp-model.js';
import { decodeExportRequest } from '../../../../../lambda/ingest/otlp/protobuf/decode-export-request.js';
import { UndecodableRequestError } from '../../../../../lambda/ingest/otlp/protobuf/undecodable-request-error.js';
import { MAX_JSON_CONTAINERS } from '../../../../../lambda/shared/domain/json-limits.js';
import { attempt, disagreement } from '../../../../support/otlp-decoder-differential.js';
import { group, len, otlp, tag, varintField, WIRE } from '../../../../support/protobuf-bytes.js';

/*
 * The decoder's refusals word for word (the 400 carries them: the offset points a client at the bad byte) and its
 * limits at their edges. The differential tests (decode-export-request.test.ts) hold what is accepted and refused
 * to protobufjs; these hold what the refusal says and where each bound falls.
 */

const refused = (reason: string) => `not a valid protobuf ExportTraceServiceRequest (${reason})`;

function outcome(bytes: Uint8Array): { decoded: OtlpExport } | { error: string } {
  try {
    return { decoded: decodeExportRequest(bytes) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

const spansOf = (bytes: Uint8Array) => {
  const result = outcome(bytes);
  if ('error' in result) throw new Error(result.error);
  return result.decoded.resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans));
};

describe('decodeExportRequest refuses malformed bodies, naming what and where', () => {
  it.each([
    ['a length past the end of the body', Buffer.from([0x0a, 0x7f, 0x0a]), refused('index out of range at offset 2')],
    ['a length of 2^31', Buffer.from([0x0a, 0x80, 0x80, 0x80, 0x80, 0x08]), refused('invalid length encoding')],
    ['a tag whose fifth byte is 16', Buffer.from([0xc0, 0xbe, 0x80, 0x80, 0x10, 0x01]), refused('invalid tag encoding')],
    ['wire type 6 in a span', otlp.oneSpan(len(5, 'name'), tag(1000, 6), Buffer.from([1])), refused('invalid wire type 6 at offset 14')],
    ['wire type 7 in the request', Buffer.concat([tag(3, 7), Buffer.from([1])]), refused('invalid wire type 7 at offset 1')],
    ['an end-group tag without a group', otlp.oneSpan(tag(1000, WIRE.groupEnd)), refused('invalid wire type 4 at offset 8')],
    ['a group whose end tag names another field', otlp.oneSpan(tag(1000, WIRE.groupStart), varintField(1, 1), tag(1001, WIRE.groupEnd)), refused('invalid end group tag')],
    ['a group that never ends', otlp.oneSpan(tag(1000, WIRE.groupStart), varintField(1, 1)), refused('index out of range at offset 10')],
    ['field number 0', otlp.oneSpan(varintField(0, 1)), refused('illegal tag: field number 0')],
    ['field number 0 inside a group', otlp.oneSpan(tag(1000, WIRE.groupStart), varintField(0, 1), tag(1000, WIRE.groupEnd)), refused('illegal tag: field number 0')],
    ['an end-group tag of field 0 inside a group', otlp.oneSpan(tag(1000, WIRE.groupStart), Buffer.from([0x04])), refused('illegal tag: field number 0')],
    ['a group that never ends in its span, the body going on', otlp.request(otlp.scopeSpans(otlp.span(tag(1000, WIRE.groupStart), varintField(1, 1)), otlp.span(len(5, 'x')))), refused('index out of range at offset 10')],
    ['a known field with another wire type', otlp.oneSpan(varintField(5, 1)), refused('field 5 has wire type 0, expected 2')],
    ['a varint of 11 bytes', otlp.oneSpan(tag(6, WIRE.varint), Buffer.alloc(10, 0x81), Buffer.from([0x01])), refused('invalid varint encoding')],
    ['invalid UTF-8 in a short string', otlp.oneSpan(len(5, Buffer.from([0x61, 0xff]))), refused('invalid UTF-8 in the string at offset 8')],
    ['invalid UTF-8 in a long string', otlp.oneSpan(len(5, Buffer.from('x'.repeat(60)), Buffer.from([0xff]))), refused('invalid UTF-8 in the string at offset 8')],
    ['invalid UTF-8 in a string read only for its validity', otlp.request(len(3, Buffer.from([0x61, 0xff]))), refused('invalid UTF-8 in the string at offset 4')],
  ])('%s', (_, bytes, error) => {
    expect(outcome(bytes)).toEqual({ error });
  });

  it('says "max depth exceeded" past the recursion limit', () => {
    const deep = Array.from({ length: 120 }).reduce<Buffer>((inner) => group(1000, inner), varintField(1, 1));
    expect(outcome(otlp.oneSpan(deep))).toEqual({ error: refused('max depth exceeded') });
  });
});

describe('decodeExportRequest reads', () => {
  it('throws its refusals as UndecodableRequestError, so named', () => {
    let thrown: unknown;
    try {
      decodeExportRequest(Buffer.from([0x0a, 0x7f]));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(UndecodableRequestError);
    expect((thrown as Error).name).toBe('UndecodableRequestError');
  });

  it('an unknown field whose tag takes two bytes, the first 0x80 (field 16, a varint), in an event', () => {
    const spans = spansOf(otlp.oneSpan(len(11, len(2, 'e'), varintField(16, 1), varintField(32, 2))));
    expect(spans[0]?.events).toEqual([{ name: 'e', timeUnixMicros: 0, attributes: {} }]);
  });

  it('a Uint8Array that is not a Buffer, at an offset into its memory', () => {
    const body = otlp.oneSpan(len(1, Buffer.from('0af7651916cd43dd8448eb211c80319c', 'hex')), len(2, Buffer.from('b7ad6b7169203331', 'hex')), len(5, 'chat'), otlp.attribute('b', len(7, Buffer.from([0, 255]))));
    const memory = new Uint8Array(body.length + 7).fill(0xff);
    memory.set(body, 3);
    const spans = spansOf(memory.subarray(3, 3 + body.length));
    expect(spans[0]).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', name: 'chat', attributes: { b: 'AP8=' } });
  });
});

describe('the container budget counts the brackets of strings even when the request builds nothing', () => {
  // A resource attribute holding one string of brackets, no span: nothing built, the brackets alone decide.
  const brackets = (count: number) => otlp.request(otlp.resource(len(1, otlp.keyValue('a', otlp.string('['.repeat(count))))));

  it.each([
    ['a span', otlp.span(), 1],
    ['a span and its event', otlp.span(len(11)), 2],
    ['a span and an array attribute', otlp.span(otlp.attribute('x', len(5))), 2],
    ['a span and a key-value list attribute', otlp.span(otlp.attribute('x', len(6))), 2],
  ])('counts %s against the same budget, each one container', (_, span, built) => {
    const body = (count: number) => otlp.request(otlp.resource(len(1, otlp.keyValue('a', otlp.string('['.repeat(count))))), otlp.scopeSpans(span));
    expect('decoded' in outcome(body(MAX_JSON_CONTAINERS - built))).toBe(true);
    expect(outcome(body(MAX_JSON_CONTAINERS - built + 1))).toEqual({ error: expect.stringMatching(/^more than 1000000 JSON arrays and objects \(/) });
  });

  it(`accepts ${MAX_JSON_CONTAINERS} brackets and refuses one more`, () => {
    const accepted = outcome(brackets(MAX_JSON_CONTAINERS));
    expect('decoded' in accepted && accepted.decoded.resourceSpans[0]?.resourceAttributes.a).toHaveLength(MAX_JSON_CONTAINERS);
    expect(outcome(brackets(MAX_JSON_CONTAINERS + 1))).toEqual({ error: expect.stringMatching(/^more than 1000000 JSON arrays and objects \(/) });
  });
});

describe('the recursion limit, whatever message the nesting ends in', () => {
  // Where an attribute's value sits: kept (span, event, resource) or read only for its validity (scope, link).
  const contexts: [string, (value: Buffer) => Buffer][] = [
    ['a span attribute', (value) => otlp.oneSpan(otlp.attribute('a', value))],
    ['an event attribute', (value) => otlp.oneSpan(len(11, len(3, otlp.keyValue('a', value))))],
    ['a resource attribute', (value) => otlp.request(otlp.resource(len(1, otlp.keyValue('a', value))))],
    ['a scope attribute', (value) => otlp.request(otlp.scopeSpans(otlp.scope(len(3, otlp.keyValue('a', value)))))],
    ['a link attribute', (value) => otlp.oneSpan(len(13, len(4, otlp.keyValue('a', value))))],
  ];
  // Each level adds two messages (AnyValue, ArrayValue) or three (AnyValue, KeyValueList, KeyValue).
  const chains: [string, (value: Buffer) => Buffer, number][] = [
    ['arrays', (value) => otlp.array(value), 2],
    ['key-value lists', (value) => otlp.kvlist(otlp.keyValue('k', value)), 3],
  ];
  // The innermost AnyValue's fields: ending the nesting 0 to 3 messages below it, so that across leaves and
  // levels the deepest message is each kind of message at depth 100 and at 101.
  const leaves: Buffer[] = [otlp.string('x'), Buffer.alloc(0), len(5), len(6), len(5, len(1)), len(6, len(1)), len(6, len(1, len(1, 'k'), len(2)))];

  it.each(contexts)('in %s: accepted and refused where protobufjs accepts and refuses', (_, place) => {
    const problems: string[] = [];
    const outcomes = new Set<boolean>();
    for (const [chain, wrap, perLevel] of chains) {
      for (const leaf of leaves) {
        for (let levels = Math.floor(90 / perLevel); levels <= Math.ceil(104 / perLevel); levels++) {
          let value = leaf;
          for (let i = 0; i < levels; i++) value = wrap(value);
          const bytes = place(value);
          const problem = disagreement(bytes);
          if (problem) problems.push(`${chain}, ${levels} levels, leaf ${leaf.toString('hex')}: ${problem.slice(0, 200)}`);
          outcomes.add(attempt(decodeExportRequest, bytes).ok);
        }
      }
    }
    expect(problems.slice(0, 3)).toEqual([]);
    expect([...outcomes].sort()).toEqual([false, true]);
  });
});
