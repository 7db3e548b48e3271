import { constants, gunzipSync, gzipSync } from 'node:zlib';
import { describeValue, jsonSyntaxReason } from './describe-value.js';
import type { AcceptedTrace, TraceContext } from './trace.js';

/**
 * The format of one record on the trace stream: one accepted trace and its server context, as
 * gzip-compressed JSON. A trace too large for one Kinesis record travels by reference: its
 * {@link InlineTraceRecord}, encoded the same way, is an S3 object and the stream carries a pointer.
 *
 * gzip rather than zstd: Node 20 (local stack, tests) has no zstd, and one codec everywhere keeps a
 * record readable by any consumer. The decoder recognises both by their magic bytes, so a later
 * switch to zstd on the Lambda runtimes needs no consumer change.
 */
export const TRACE_RECORD_VERSION = 1;

export interface InlineTraceRecord {
  v: typeof TRACE_RECORD_VERSION;
  context: TraceContext;
  trace: AcceptedTrace;
}

export interface TraceReference {
  bucket: string;
  key: string;
  /** Size of the encoded object in bytes. */
  bytes: number;
  trace_id: string;
}

export interface TraceReferenceRecord {
  v: typeof TRACE_RECORD_VERSION;
  context: TraceContext;
  ref: TraceReference;
}

export type TraceRecord = InlineTraceRecord | TraceReferenceRecord;

/** Kinesis allows 1 MiB per record, partition key included; stay clear of it. */
export const MAX_INLINE_RECORD_BYTES = 1_000_000;

export class TraceRecordDecodeError extends Error {
  override name = 'TraceRecordDecodeError';
}

const GZIP_MAGIC = [0x1f, 0x8b] as const;
const ZSTD_MAGIC = [0x28, 0xb5, 0x2f, 0xfd] as const;

/** Compresses an already serialised record (the hot path serialises once and reuses the text). */
export function compressRecordJson(json: string): Buffer {
  return gzipSync(json, { level: constants.Z_BEST_SPEED });
}

export function encodeTraceRecord(record: TraceRecord): Buffer {
  return compressRecordJson(JSON.stringify(record));
}

export function isReferenceRecord(record: TraceRecord): record is TraceReferenceRecord {
  return 'ref' in record;
}

function startsWith(data: Uint8Array, magic: readonly number[]): boolean {
  return data.length >= magic.length && magic.every((byte, i) => data[i] === byte);
}

function decompress(data: Uint8Array): Buffer {
  if (startsWith(data, GZIP_MAGIC)) return gunzipSync(data);
  if (startsWith(data, ZSTD_MAGIC)) {
    const zlib = process.getBuiltinModule?.('node:zlib') as
      | (typeof import('node:zlib') & { zstdDecompressSync?: (d: Uint8Array) => Buffer })
      | undefined;
    if (zlib?.zstdDecompressSync) return zlib.zstdDecompressSync(data);
    throw new TraceRecordDecodeError('zstd record but this runtime has no zstd');
  }
  throw new TraceRecordDecodeError('unknown record encoding (neither gzip nor zstd)');
}

/** Decodes one record; throws {@link TraceRecordDecodeError} with the reason when it cannot. */
export function decodeTraceRecord(data: Uint8Array): TraceRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(decompress(data).toString('utf8'));
  } catch (error) {
    if (error instanceof TraceRecordDecodeError) throw error;
    throw new TraceRecordDecodeError(`record is not valid compressed JSON: ${jsonSyntaxReason(error)}`, { cause: error });
  }
  if (typeof parsed !== 'object' || parsed === null) {
    throw new TraceRecordDecodeError('record is not a JSON object');
  }
  const record = parsed as Partial<InlineTraceRecord & TraceReferenceRecord>;
  if (record.v !== TRACE_RECORD_VERSION) {
    throw new TraceRecordDecodeError(`unsupported record version ${typeof record.v === 'number' ? record.v : describeValue(record.v)}`);
  }
  if (typeof record.context !== 'object' || record.context === null) {
    throw new TraceRecordDecodeError('record has no context');
  }
  if (typeof record.trace === 'object' && record.trace !== null) return record as InlineTraceRecord;
  if (typeof record.ref === 'object' && record.ref !== null) return record as TraceReferenceRecord;
  throw new TraceRecordDecodeError('record has neither trace nor ref');
}

/** The identity of a record's copies: its `record_id`, or for older records its request and trace. */
export function recordIdentity(context: TraceContext, traceId: string): string {
  return context.record_id ?? `${context.request_id}/${traceId}`;
}
