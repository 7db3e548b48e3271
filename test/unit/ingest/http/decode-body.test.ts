import { deflateSync, gzipSync } from 'node:zlib';
import { decodeBody, decodeBodyBytes, decodeUtf8, MAX_DECODED_BODY_BYTES, type RawBody } from '../../../../lambda/ingest/http/decode-body.js';
import { BatchTooLargeError, MalformedBodyError } from '../../../../lambda/ingest/core/errors.js';

/** The body as API Gateway hands it over: text, or base64 for a binary media type. */
const text = (body: string, contentEncoding?: string): RawBody => ({ body, isBase64Encoded: false, contentEncoding });
const base64 = (bytes: Uint8Array, contentEncoding?: string): RawBody => ({ body: Buffer.from(bytes).toString('base64'), isBase64Encoded: true, contentEncoding });
/** Compressed bytes passed as text, one byte per character: what a gateway that does not inflate hands over. */
const latin1 = (bytes: Uint8Array, contentEncoding?: string): RawBody => text(Buffer.from(bytes).toString('latin1'), contentEncoding);

const TOO_LARGE =
  'Request body too large: the decoded body is over 4194304 bytes; split the batch into requests of at most 4194304 bytes decoded (4 MiB); resending it unchanged cannot succeed';

/** The refusal `work` throws: its class, status and message. */
function refusal(work: () => unknown): { type: string; status: number; message: string } {
  try {
    work();
  } catch (error) {
    const { status, message } = error as { status: number; message: string };
    return { type: (error as Error).constructor.name, status, message };
  }
  throw new Error('no refusal');
}
const tooLarge = { type: BatchTooLargeError.name, status: 413, message: TOO_LARGE };
const malformed = (message: string) => ({ type: MalformedBodyError.name, status: 400, message });

describe('decodeBody: a text body (not base64, not compressed)', () => {
  it('is returned as it is, a leading byte-order mark dropped (RFC 8259 lets a reader ignore it)', () => {
    expect(decodeBody(text('{"traces":[]}'))).toBe('{"traces":[]}');
    expect(decodeBody(text('\ufeff{"traces":[]}'))).toBe('{"traces":[]}');
    expect(decodeBody(text('\ufeff\ufeff{}'))).toBe('\ufeff{}');
    expect(decodeBody(text('{"a":"\ufeff"}'))).toBe('{"a":"\ufeff"}');
  });

  it('is refused 400 when absent or empty', () => {
    const message = 'Malformed body: the request has no body; send a JSON object with a "traces" array';
    expect(refusal(() => decodeBody({ body: null, isBase64Encoded: false, contentEncoding: undefined }))).toEqual(malformed(message));
    expect(refusal(() => decodeBody(text('')))).toEqual(malformed(message));
  });

  it('of exactly the ceiling in UTF-8 bytes is accepted, one byte more is refused 413', () => {
    expect(decodeBody(text('a'.repeat(MAX_DECODED_BODY_BYTES)))).toHaveLength(MAX_DECODED_BODY_BYTES);
    expect(refusal(() => decodeBody(text('a'.repeat(MAX_DECODED_BODY_BYTES + 1))))).toEqual(tooLarge);
  });

  // The pre-check skips counting bytes for text of at most a third of the ceiling in UTF-16 units: a unit
  // encodes to at most 3 UTF-8 bytes. Just over that third, 3-byte characters are over the ceiling.
  it('of 3-byte characters just over a third of the ceiling in length is refused 413; just under it, accepted', () => {
    const third = Math.floor(MAX_DECODED_BODY_BYTES / 3);
    expect(decodeBody(text('€'.repeat(third)))).toHaveLength(third);
    expect(Buffer.byteLength('€'.repeat(third + 1))).toBeGreaterThan(MAX_DECODED_BODY_BYTES);
    expect(refusal(() => decodeBody(text('€'.repeat(third + 1))))).toEqual(tooLarge);
  });

  it('counts 2-byte characters as 2 bytes: half the ceiling in length is accepted, one more character refused', () => {
    const half = MAX_DECODED_BODY_BYTES / 2;
    expect(decodeBody(text('é'.repeat(half)))).toHaveLength(half);
    expect(refusal(() => decodeBody(text('é'.repeat(half) + 'a')))).toEqual(tooLarge);
  });
});

describe('decodeBody: Content-Encoding', () => {
  const json = '{"traces":[{"id":"é"}]}';

  it.each(['gzip', 'GZIP', ' gzip ', 'x-gzip'])('inflates gzip bytes labelled %p, base64 or passed as text', (coding) => {
    expect(decodeBody(base64(gzipSync(json), coding))).toBe(json);
    expect(decodeBody(latin1(gzipSync(json), coding))).toBe(json);
  });

  it('inflates gzip bytes that arrive with no Content-Encoding (a gateway that dropped the header)', () => {
    expect(decodeBody(base64(gzipSync(json)))).toBe(json);
    expect(decodeBody(latin1(gzipSync(json)))).toBe(json);
  });

  it.each(['deflate', 'Deflate'])('inflates zlib bytes labelled %p, base64 or passed as text', (coding) => {
    expect(decodeBody(base64(deflateSync(json), coding))).toBe(json);
    expect(decodeBody(latin1(deflateSync(json), coding))).toBe(json);
  });

  it.each(['gzip', 'deflate', 'identity', undefined])('reads a body labelled %p that the gateway already inflated as it is', (coding) => {
    expect(decodeBody(text(json, coding))).toBe(json);
    expect(decodeBody(base64(Buffer.from(json), coding))).toBe(json);
  });

  // 'x^' is a valid zlib header (method 8, check value a multiple of 31): only a deflate label makes it one.
  it('inflates a zlib header only under a deflate label', () => {
    expect(decodeBody(text('x^ is text', 'gzip'))).toBe('x^ is text');
    expect(decodeBody(text('x^ is text'))).toBe('x^ is text');
    expect(decodeBody(base64(Buffer.from('x^ is text'), 'identity'))).toBe('x^ is text');
    expect(refusal(() => decodeBody(text('x^ is text', 'deflate')))).toEqual(
      malformed('Malformed body: Content-Encoding is deflate but the body is not valid deflate data'),
    );
  });

  it('takes as zlib only method 8 with a check value that is a multiple of 31', () => {
    // 'yV': a multiple of 31, but method 9. 'xA': method 8, not a multiple of 31.
    expect(decodeBody(text('yV is text', 'deflate'))).toBe('yV is text');
    expect(decodeBody(text('xA is text', 'deflate'))).toBe('xA is text');
    expect(decodeBody(base64(Buffer.from('xA is text'), 'deflate'))).toBe('xA is text');
  });

  it('refuses 400 gzip and zlib headers over data that does not inflate, down to the two header bytes alone', () => {
    const gzipMessage = 'Malformed body: Content-Encoding is gzip but the body is not valid gzip data';
    expect(refusal(() => decodeBody(base64(Buffer.from([0x1f, 0x8b, 1, 2, 3]), 'gzip')))).toEqual(malformed(gzipMessage));
    expect(refusal(() => decodeBody(base64(Buffer.from([0x1f, 0x8b]), 'gzip')))).toEqual(malformed(gzipMessage));
    expect(refusal(() => decodeBody(latin1(Buffer.from([0x1f, 0x8b]))))).toEqual(malformed(gzipMessage));
    expect(refusal(() => decodeBody(text('x^', 'deflate')))).toEqual(malformed('Malformed body: Content-Encoding is deflate but the body is not valid deflate data'));
  });

  it.each(['br', 'gzip, deflate', 'compress'])('refuses 400 a Content-Encoding it does not support (%p)', (coding) => {
    expect(refusal(() => decodeBody(text(json, coding)))).toEqual(
      malformed(`Malformed body: Content-Encoding '${coding}' is not supported; send gzip, deflate or no encoding`),
    );
    expect(refusal(() => decodeBodyBytes(base64(Buffer.from(json), coding)))).toEqual(
      malformed(`Malformed body: Content-Encoding '${coding}' is not supported; send gzip, deflate or no encoding`),
    );
  });

  it('refuses 400 a body that is not UTF-8 once decoded, and drops a decoded byte-order mark', () => {
    expect(refusal(() => decodeBody(base64(Buffer.from([0x7b, 0xff, 0x7d]))))).toEqual(malformed('Malformed body: the body is not valid UTF-8 text'));
    expect(refusal(() => decodeUtf8(Buffer.from([0xc3])))).toEqual(malformed('Malformed body: the body is not valid UTF-8 text'));
    expect(decodeBody(base64(Buffer.from('\ufeff{}')))).toBe('{}');
  });
});

describe('decodeBody: what is not compressed stays as it is', () => {
  it('reads as text a body with only one of the two gzip header bytes', () => {
    // 'ċ' is C4 8B in UTF-8: a second byte of 0x8b after a first that is not 0x1f.
    expect(decodeBody(base64(Buffer.from('ċ{}')))).toBe('ċ{}');
    expect(decodeBody(base64(Buffer.from('\u001fa')))).toBe('\u001fa');
    expect(decodeBody(text('\u001fa'))).toBe('\u001fa');
  });

  it('reads a text body that starts like zlib, under a label other than deflate, as UTF-16 text, not as bytes', () => {
    expect(decodeBody(text('x^ é', 'gzip'))).toBe('x^ é');
  });

  it('returns the gateway\'s text unchanged, never re-encoded (an unpaired surrogate stays)', () => {
    expect(decodeBody(text('{"a":"\ud800"}'))).toBe('{"a":"\ud800"}');
  });

  it('keeps the inflate or UTF-8 failure as the cause of a 400', () => {
    const causeOf = (work: () => unknown) => {
      try {
        work();
      } catch (error) {
        return (error as Error).cause;
      }
      return undefined;
    };
    expect(causeOf(() => decodeBody(base64(Buffer.from([0x1f, 0x8b, 1, 2, 3]), 'gzip')))).toMatchObject({ code: 'Z_DATA_ERROR' });
    expect(causeOf(() => decodeUtf8(Buffer.from([0xc3])))).toMatchObject({ code: 'ERR_ENCODING_INVALID_ENCODED_DATA' });
  });
});

describe('decodeBodyBytes: the ceiling on decoded bytes', () => {
  it('refuses 400 a request with no body', () => {
    const message = 'Malformed body: the request has no body';
    expect(refusal(() => decodeBodyBytes({ body: null, isBase64Encoded: true, contentEncoding: undefined }))).toEqual(malformed(message));
    expect(refusal(() => decodeBodyBytes(base64(Buffer.alloc(0))))).toEqual(malformed(message));
  });

  it('returns binary bytes as they are, never read as text', () => {
    const protobuf = Buffer.from([0x0a, 0xff, 0x00, 0x80, 0x1f]);
    expect(decodeBodyBytes(base64(protobuf))).toEqual(protobuf);
  });

  it('accepts exactly the ceiling and refuses one byte more, base64 or inflated', () => {
    const at = Buffer.alloc(MAX_DECODED_BODY_BYTES, 0x61);
    const over = Buffer.alloc(MAX_DECODED_BODY_BYTES + 1, 0x61);
    expect(decodeBodyBytes(base64(at))).toHaveLength(MAX_DECODED_BODY_BYTES);
    expect(refusal(() => decodeBodyBytes(base64(over)))).toEqual(tooLarge);
    expect(decodeBodyBytes(base64(gzipSync(at), 'gzip'))).toHaveLength(MAX_DECODED_BODY_BYTES);
    expect(refusal(() => decodeBodyBytes(base64(gzipSync(over), 'gzip')))).toEqual(tooLarge);
    expect(decodeBodyBytes(base64(deflateSync(at), 'deflate'))).toHaveLength(MAX_DECODED_BODY_BYTES);
    expect(refusal(() => decodeBodyBytes(base64(deflateSync(over), 'deflate')))).toEqual(tooLarge);
  });

  it('stops a gzip bomb at the ceiling with 413 instead of inflating it', () => {
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
    expect(bomb.length).toBeLessThan(100_000);
    expect(refusal(() => decodeBodyBytes(base64(bomb, 'gzip')))).toEqual(tooLarge);
  });
});
