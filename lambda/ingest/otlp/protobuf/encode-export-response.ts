/*
 * The two binary answers of OTLP/HTTP, encoded by hand: each is a message of one or two scalar fields, so a
 * protobuf runtime in the bundle would only serve them. Fields at their default (0, '') are left out, as proto3
 * and protobufjs leave them out; the tests hold the bytes to what the protobufjs code generated from the same
 * protos writes (https://protobuf.dev/programming-guides/encoding/).
 */

const VARINT = 0;
const LEN = 2;
const NO_BYTES = new Uint8Array(0);

/**
 * A varint: a non-negative integer in 7-bit groups, low group first; a negative `int32` or `int64` as its 64-bit
 * two's complement, so ten bytes.
 */
function varint(value: number): Uint8Array {
  if (!Number.isSafeInteger(value)) throw new RangeError(`not a safe integer: ${value}`);
  const bytes: number[] = [];
  let rest = BigInt.asUintN(64, BigInt(value));
  while (rest >= 0x80n) {
    bytes.push(Number(rest & 0x7fn) | 0x80);
    rest >>= 7n;
  }
  bytes.push(Number(rest));
  return Uint8Array.from(bytes);
}

const tag = (field: number, wireType: number): Uint8Array => varint((field << 3) | wireType);

/** An integer field (`int32`, `int64`), left out at 0. */
function integerField(field: number, value: number): Uint8Array {
  return value === 0 ? NO_BYTES : Buffer.concat([tag(field, VARINT), varint(value)]);
}

/** A length-delimited field: `bytes` as a nested message, or a string's UTF-8. */
function lengthDelimitedField(field: number, bytes: Uint8Array): Uint8Array {
  return Buffer.concat([tag(field, LEN), varint(bytes.length), bytes]);
}

/** A string field, left out when empty. A lone surrogate, which UTF-8 cannot hold, is written as U+FFFD. */
function stringField(field: number, text: string): Uint8Array {
  return text === '' ? NO_BYTES : lengthDelimitedField(field, Buffer.from(text, 'utf8'));
}

/**
 * The binary `ExportTraceServiceResponse`: empty when every span was accepted, else `partial_success`
 * (field 1) holding `rejected_spans` (1, int64) and `error_message` (2).
 */
export function encodeExportResponse(rejectedSpans: number, errorMessage: string): Uint8Array {
  if (rejectedSpans <= 0 && errorMessage === '') return NO_BYTES;
  return lengthDelimitedField(1, Buffer.concat([integerField(1, rejectedSpans), stringField(2, errorMessage)]));
}

/** The binary `google.rpc.Status` an OTLP/HTTP error response carries: `code` (1, int32) and `message` (2), no details. */
export function encodeStatus(code: number, message: string): Uint8Array {
  return Buffer.concat([integerField(1, code), stringField(2, message)]);
}
