/**
 * Protobuf wire bytes written by hand, for bodies the generated encoder cannot make: wrong wire types,
 * unknown fields, groups, merged fields, truncated or over-long varints
 * (https://protobuf.dev/programming-guides/encoding/).
 */

export const WIRE = { varint: 0, i64: 1, len: 2, groupStart: 3, groupEnd: 4, i32: 5 } as const;

/** An unsigned LEB128 varint of the value's low 64 bits (a negative value as two's complement, 10 bytes). */
export function varint(value: bigint | number): Buffer {
  let rest = BigInt.asUintN(64, BigInt(value));
  const bytes: number[] = [];
  while (rest > 0x7fn) {
    bytes.push(Number(rest & 0x7fn) | 0x80);
    rest >>= 7n;
  }
  bytes.push(Number(rest));
  return Buffer.from(bytes);
}

export const tag = (field: number, wireType: number): Buffer => varint((BigInt(field) << 3n) | BigInt(wireType));

export const len = (field: number, ...payload: (Buffer | string)[]): Buffer => {
  const bytes = Buffer.concat(payload.map((part) => (typeof part === 'string' ? Buffer.from(part) : part)));
  return Buffer.concat([tag(field, WIRE.len), varint(bytes.length), bytes]);
};

export const varintField = (field: number, value: bigint | number): Buffer => Buffer.concat([tag(field, WIRE.varint), varint(value)]);

export function fixed64Field(field: number, value: bigint): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64LE(BigInt.asUintN(64, value));
  return Buffer.concat([tag(field, WIRE.i64), bytes]);
}

export function fixed32Field(field: number, value: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32LE(value >>> 0);
  return Buffer.concat([tag(field, WIRE.i32), bytes]);
}

export function doubleField(field: number, value: number): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeDoubleLE(value);
  return Buffer.concat([tag(field, WIRE.i64), bytes]);
}

export const group = (field: number, ...payload: Buffer[]): Buffer => Buffer.concat([tag(field, WIRE.groupStart), ...payload, tag(field, WIRE.groupEnd)]);

/** OTLP messages by field number (opentelemetry-proto v1.11.0). */
export const otlp = {
  /** An ExportTraceServiceRequest of ResourceSpans, each given as its fields. */
  request: (...resourceSpans: Buffer[]): Buffer => Buffer.concat(resourceSpans.map((fields) => len(1, fields))),
  /** ResourceSpans fields: the resource, of these fields. */
  resource: (...fields: Buffer[]): Buffer => len(1, ...fields),
  /** ResourceSpans fields: a ScopeSpans, of these fields. */
  scopeSpans: (...fields: Buffer[]): Buffer => len(2, ...fields),
  /** ScopeSpans fields: the scope, of these fields. */
  scope: (...fields: Buffer[]): Buffer => len(1, ...fields),
  /** ScopeSpans fields: a span, of these fields. */
  span: (...fields: Buffer[]): Buffer => len(2, ...fields),
  /** An ExportTraceServiceRequest holding one span of these fields. */
  oneSpan: (...fields: Buffer[]): Buffer => len(1, len(2, len(2, ...fields))),
  keyValue: (key: string | Buffer, value?: Buffer): Buffer => Buffer.concat([len(1, key), ...(value ? [len(2, value)] : [])]),
  /** A span holding one attribute. */
  attribute: (key: string | Buffer, value?: Buffer): Buffer => len(9, len(1, key), ...(value ? [len(2, value)] : [])),
  string: (text: string | Buffer): Buffer => len(1, text),
  array: (...items: Buffer[]): Buffer => len(5, ...items.map((item) => len(1, item))),
  kvlist: (...entries: Buffer[]): Buffer => len(6, ...entries.map((entry) => len(1, entry))),
};

/** An AnyValue nesting `depth` arrays around a string. */
export function nestedArrays(depth: number): Buffer {
  let value = otlp.string('leaf');
  for (let i = 0; i < depth; i++) value = otlp.array(value);
  return value;
}

/** An AnyValue nesting `depth` key-value lists around `leaf` (a string). */
export function nestedKvlists(depth: number, leaf = otlp.string('leaf')): Buffer {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = otlp.kvlist(otlp.keyValue(`k${i}`, value));
  return value;
}
