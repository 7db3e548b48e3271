import { gunzipSync } from 'node:zlib';
import { MalformedBodyError, PayloadTooLargeError } from '../errors.js';

/** Decoded (gunzipped) bodies above this size get 413 (docs/contract.md §4). */
export const MAX_DECODED_BODY_BYTES = 20 * 1024 * 1024;

export interface RawBody {
  body: string | null;
  isBase64Encoded: boolean;
  /** The `Content-Encoding` header, if any. */
  contentEncoding: string | undefined;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
const tooLarge = () =>
  new PayloadTooLargeError(
    `Request body too large: the decoded body must be at most ${MAX_DECODED_BODY_BYTES} bytes (20 MiB); split the batch`,
  );

function isGzip(bytes: Buffer): boolean {
  return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

function gunzipBounded(bytes: Buffer): Buffer {
  try {
    // maxOutputLength bounds memory: a gzip bomb stops at the limit instead of inflating.
    return gunzipSync(bytes, { maxOutputLength: MAX_DECODED_BODY_BYTES + 1 });
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge();
    throw new MalformedBodyError('Malformed body: Content-Encoding is gzip but the body is not valid gzip data', {
      cause: error,
    });
  }
}

/**
 * Undoes base64 (binary bodies from API Gateway) and gzip and enforces the decoded size limit,
 * returning the body's bytes: what a binary format (OTLP protobuf) decodes from.
 */
export function decodeBodyBytes(raw: RawBody): Buffer {
  if (raw.body === null || raw.body === '') throw new MalformedBodyError('Malformed body: the request has no body');
  const encoding = checkedEncoding(raw);
  let bytes: Buffer = raw.isBase64Encoded ? Buffer.from(raw.body, 'base64') : Buffer.from(raw.body, 'latin1');
  if (encoding === 'gzip' || isGzip(bytes)) bytes = gunzipBounded(bytes);
  if (bytes.length > MAX_DECODED_BODY_BYTES) throw tooLarge();
  return bytes;
}

function checkedEncoding(raw: RawBody): 'gzip' | 'identity' {
  const encoding = raw.contentEncoding?.trim().toLowerCase() ?? '';
  if (encoding === 'gzip' || encoding === 'x-gzip') return 'gzip';
  if (encoding === '' || encoding === 'identity') return 'identity';
  throw new MalformedBodyError(`Malformed body: Content-Encoding '${raw.contentEncoding}' is not supported; send gzip or no encoding`);
}

/**
 * Undoes base64 (binary bodies from API Gateway) and gzip, enforces the decoded size limit and
 * decodes UTF-8 strictly. A leading byte-order mark is dropped (RFC 8259 allows ignoring it).
 */
export function decodeBody(raw: RawBody): string {
  if (raw.body === null || raw.body === '') {
    throw new MalformedBodyError('Malformed body: the request has no body; send a JSON object with a "traces" array');
  }
  if (!raw.isBase64Encoded && checkedEncoding(raw) === 'identity') {
    // Already text: only its size needs checking.
    if (raw.body.length * 3 > MAX_DECODED_BODY_BYTES && Buffer.byteLength(raw.body, 'utf8') > MAX_DECODED_BODY_BYTES) throw tooLarge();
    return raw.body.charCodeAt(0) === 0xfeff ? raw.body.slice(1) : raw.body;
  }
  return decodeUtf8(decodeBodyBytes(raw));
}

/** Strict UTF-8, as every JSON body is read. */
export function decodeUtf8(bytes: Buffer): string {
  try {
    return utf8.decode(bytes);
  } catch (error) {
    throw new MalformedBodyError('Malformed body: the body is not valid UTF-8 text', { cause: error });
  }
}
