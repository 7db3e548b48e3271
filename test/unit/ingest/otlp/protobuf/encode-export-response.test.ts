import Long from 'long';
import { google, opentelemetry } from '../../../../../devkit/generated/otlp-trace.js';
import { encodeExportResponse, encodeStatus } from '../../../../../lambda/ingest/otlp/protobuf/encode-export-response.js';

const Response = opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
const Status = google.rpc.Status;
const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

const messages = ['', 'x', 'Malformed body: not a valid protobuf ExportTraceServiceRequest (index out of range at offset 3)', 'ünïcode ✓ 🚀 \u0000 nul', 'm'.repeat(127), 'm'.repeat(128), 'long '.repeat(4_000)];

describe('the hand encoder of the OTLP answers writes the bytes the protobufjs-generated encoder writes', () => {
  it.each([0, 1, 2, 127, 128, 300, 16_384, 2 ** 31, 2 ** 40 + 5, Number.MAX_SAFE_INTEGER])('ExportTraceServiceResponse, %d rejected spans, every message', (rejectedSpans) => {
    for (const errorMessage of messages) {
      const expected = rejectedSpans > 0 || errorMessage !== '' ? Response.encode({ partialSuccess: { rejectedSpans: Long.fromNumber(rejectedSpans), errorMessage } }).finish() : Response.encode({}).finish();
      expect([rejectedSpans, errorMessage.slice(0, 20), hex(encodeExportResponse(rejectedSpans, errorMessage))]).toEqual([rejectedSpans, errorMessage.slice(0, 20), hex(expected)]);
    }
  });

  it.each([0, 3, 7, 8, 14, 16, 2 ** 31 - 1, -1, -(2 ** 31)])('google.rpc.Status, code %d, every message', (code) => {
    for (const message of messages) {
      expect([code, message.slice(0, 20), hex(encodeStatus(code, message))]).toEqual([code, message.slice(0, 20), hex(Status.encode({ code, message, details: [] }).finish())]);
    }
  });

  it('writes nothing for an export with nothing rejected', () => {
    expect(encodeExportResponse(0, '')).toHaveLength(0);
  });

  it('decodes back, with protobufjs, to what it was given; a lone surrogate as U+FFFD, since UTF-8 cannot hold one', () => {
    const response = Response.decode(encodeExportResponse(2, 'span 1 rejected: ✓'));
    expect([Number(response.partialSuccess?.rejectedSpans), response.partialSuccess?.errorMessage]).toEqual([2, 'span 1 rejected: ✓']);
    const status = Status.decode(encodeStatus(3, 'bad \uD800 key'));
    expect([status.code, status.message]).toEqual([3, 'bad \uFFFD key']);
  });

  it('refuses a count it cannot write exactly', () => {
    expect(() => encodeExportResponse(1.5, '')).toThrow(new RangeError('not a safe integer: 1.5'));
    expect(() => encodeStatus(2 ** 53, '')).toThrow(new RangeError('not a safe integer: 9007199254740992'));
  });
});
