import { gzipSync } from 'node:zlib';
import { decodeTraceRecord, TraceRecordDecodeError } from '../../../lambda/shared/domain/trace-record.js';

describe('decodeTraceRecord names what it cannot read without quoting the record', () => {
  it('gives the parse error of a record that is not JSON without the excerpt that quotes its text', () => {
    const decode = () => decodeTraceRecord(gzipSync('{"trace": card 4111-1111-1111-1111 exp 12/29}'));
    expect(decode).toThrow(TraceRecordDecodeError);
    // The message: what the landing logs and writes into the dead letter.
    expect(decode).toThrow(/^record is not valid compressed JSON: Unexpected token 'c'$/);
  });
});
