import { gzipSync } from 'node:zlib';
import { decodeTraceRecord, TraceRecordDecodeError } from '../../../lambda/shared/domain/trace-record.js';

describe('decodeTraceRecord names what it cannot read without quoting the record', () => {
  it('gives the parse error of a record that is not JSON without the excerpt that quotes its text', () => {
    const decode = () => decodeTraceRecord(gzipSync('{"trace": card 4111-1111-1111-1111 exp 12/29}'));
    expect(decode).toThrow(TraceRecordDecodeError);
    // The message: what the landing logs and writes into the dead letter.
    expect(decode).toThrow(/^record is not valid compressed JSON: Unexpected token 'c'$/);
  });

  // The version as JSON text: the test cannot JSON.stringify a value nested 100,000 deep either.
  it.each([
    ['a newer version', '2', 'unsupported record version 2'],
    ['a version nested 100,000 deep', `${'['.repeat(100_000)}${']'.repeat(100_000)}`, 'unsupported record version an array of 1 item'],
    ['a version whose toString is a number', '{"toString": 1}', 'unsupported record version an object'],
  ])('refuses %s with a reason, not a RangeError or TypeError from quoting it', (_, version, reason) => {
    expect(() => decodeTraceRecord(gzipSync(`{"v":${version},"context":{},"trace":{}}`))).toThrow(new TraceRecordDecodeError(reason));
  });
});
