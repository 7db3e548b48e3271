import type { OtlpExport } from '../../../../../lambda/ingest/otlp/otlp-model.js';
import { decodeExportRequest } from '../../../../../lambda/ingest/otlp/protobuf/decode-export-request.js';
import { MAX_JSON_CONTAINERS } from '../../../../../lambda/shared/domain/json-limits.js';
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

  it(`accepts ${MAX_JSON_CONTAINERS} brackets and refuses one more`, () => {
    const accepted = outcome(brackets(MAX_JSON_CONTAINERS));
    expect('decoded' in accepted && accepted.decoded.resourceSpans[0]?.resourceAttributes.a).toHaveLength(MAX_JSON_CONTAINERS);
    expect(outcome(brackets(MAX_JSON_CONTAINERS + 1))).toEqual({ error: expect.stringMatching(/^more than 1000000 JSON arrays and objects \(/) });
  });
});
