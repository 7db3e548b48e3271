import { gunzipSync, inflateSync } from 'node:zlib';
import { MAX_DECODED_BODY_BYTES, SPLIT_THE_BATCH } from '../../shared/request-limits.js';
import { BatchTooLargeError, MalformedBodyError } from '../core/errors.js';

export { MAX_DECODED_BODY_BYTES };

export interface RawBody {
  body: string | null;
  isBase64Encoded: boolean;
  /** The `Content-Encoding` header, if any. */
  contentEncoding: string | undefined;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
const tooLarge = () => new BatchTooLargeError(`Request body too large: the decoded body is over ${MAX_DECODED_BODY_BYTES} bytes; ${SPLIT_THE_BATCH}`);

function isGzip(bytes: Buffer): boolean {
  return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

/** A zlib stream header (RFC 1950): method 8 and a check value that makes the first two bytes a multiple of 31. */
function isZlib(bytes: Buffer): boolean {
  return bytes.length >= 2 && ((bytes[0] as number) & 0x0f) === 8 && ((bytes[0] as number) * 256 + (bytes[1] as number)) % 31 === 0;
}

/**
 * Whether a body the gateway passed as text (not base64) still holds compressed bytes, one per
 * character: a text media type's body inflated by the gateway, or sent plain, is text to read as UTF-8.
 */
function textLooksCompressed(body: string, encoding: 'gzip' | 'deflate' | 'identity'): boolean {
  const head = Buffer.from(body.slice(0, 2), 'latin1');
  return isGzip(head) || (encoding === 'deflate' && isZlib(head));
}

function inflateBounded(bytes: Buffer, coding: 'gzip' | 'deflate'): Buffer {
  try {
    // maxOutputLength bounds memory: a gzip bomb stops at the limit instead of inflating.
    const options = { maxOutputLength: MAX_DECODED_BODY_BYTES + 1 };
    return coding === 'gzip' ? gunzipSync(bytes, options) : inflateSync(bytes, options);
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge();
    throw new MalformedBodyError(`Malformed body: Content-Encoding is ${coding} but the body is not valid ${coding} data`, {
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
  let bytes: Buffer = raw.isBase64Encoded
    ? Buffer.from(raw.body, 'base64')
    : Buffer.from(raw.body, textLooksCompressed(raw.body, encoding) ? 'latin1' : 'utf8');
  // API Gateway inflates a gzip or deflate body itself and keeps the Content-Encoding header
  // (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-make-request-with-compressed-payload.html),
  // so a body labelled with a coding it is not in arrives already decoded: read it as it is. A JSON or
  // OTLP body never starts with a gzip or zlib header, so the bytes tell the two cases apart.
  if (isGzip(bytes)) bytes = inflateBounded(bytes, 'gzip');
  else if (encoding === 'deflate' && isZlib(bytes)) bytes = inflateBounded(bytes, 'deflate');
  if (bytes.length > MAX_DECODED_BODY_BYTES) throw tooLarge();
  return bytes;
}

function checkedEncoding(raw: RawBody): 'gzip' | 'deflate' | 'identity' {
  const encoding = raw.contentEncoding?.trim().toLowerCase() ?? '';
  if (encoding === 'gzip' || encoding === 'x-gzip') return 'gzip';
  if (encoding === 'deflate') return 'deflate';
  if (encoding === '' || encoding === 'identity') return 'identity';
  throw new MalformedBodyError(`Malformed body: Content-Encoding '${raw.contentEncoding}' is not supported; send gzip, deflate or no encoding`);
}

/**
 * Undoes base64 (binary bodies from API Gateway) and gzip, enforces the decoded size limit and
 * decodes UTF-8 strictly. A leading byte-order mark is dropped (RFC 8259 allows ignoring it).
 */
export function decodeBody(raw: RawBody): string {
  if (raw.body === null || raw.body === '') {
    throw new MalformedBodyError('Malformed body: the request has no body; send a JSON object with a "traces" array');
  }
  if (!raw.isBase64Encoded && !textLooksCompressed(raw.body, checkedEncoding(raw))) {
    // Already text (never compressed, or inflated by the gateway): only its size needs checking.
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
