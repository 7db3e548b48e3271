import { parquetReadObjects } from 'hyparquet';
import zlib, { gunzipSync } from 'node:zlib';
import type { KinesisStreamEvent } from 'aws-lambda';
import type { LandingRecord } from '../../lambda/landing/landing-types.js';
import type { AcceptedSpan, AcceptedTrace, TraceContext } from '../../lambda/shared/domain/trace.js';
import { encodeTraceRecord } from '../../lambda/shared/domain/trace-record.js';
import { kinesisEventRecord } from '../lambda/lambda-events.js';
import { SMALL_SPAN, SMALL_TRACE } from './trace-builders.js';

let counter = 0;
const id = () => {
  counter++;
  return `00000000-0000-4000-8000-${counter.toString(16).padStart(12, '0')}`;
};

export function acceptedSpan(overrides: Partial<AcceptedSpan> = {}, index = 0): AcceptedSpan {
  return {
    span_id: id(),
    parent_span_id: null,
    timestamp: `2026-11-22T10:00:0${index % 10}.123456Z`,
    name: `step-${index}`,
    ...SMALL_SPAN,
    ...overrides,
  };
}

export function acceptedTrace(overrides: Partial<AcceptedTrace> = {}, spanCount = 2): AcceptedTrace {
  return {
    trace_id: id(),
    timestamp: '2026-11-22T10:00:00.000001Z',
    workspace_slug: 'ws',
    ...SMALL_TRACE,
    spans: Array.from({ length: spanCount }, (_, i) => acceptedSpan({}, i)),
    ...overrides,
  };
}

export function traceContext(overrides: Partial<TraceContext> = {}): TraceContext {
  return { org_id: 'org-a', workspace_slug: 'ws', api_key_id: 'key-1', request_id: 'req-1', received_at: '2026-11-22T10:00:01.000000Z', ...overrides };
}

export const SHARD = 'shardId-000000000000';

/** A sequence number of the shape Kinesis uses: same length, ordered as strings and as numbers. */
export const sequenceNumber = (n: number) => `4964${String(n).padStart(52, '0')}`;

export function landingRecord(n: number, data: Uint8Array, shardId = SHARD): LandingRecord {
  return { shardId, sequenceNumber: sequenceNumber(n), data, approximateArrivalTimestamp: new Date(Date.UTC(2026, 10, 22, 10, 0, n % 60)) };
}

export function inlineRecord(n: number, trace: AcceptedTrace, context: TraceContext = traceContext()): LandingRecord {
  return landingRecord(n, encodeTraceRecord({ v: 1, context, trace }));
}

/** The event the event source mapping delivers for these records. */
export function kinesisEvent(records: readonly LandingRecord[]): KinesisStreamEvent {
  return {
    Records: records.map((r) =>
      kinesisEventRecord({
        shardId: r.shardId,
        sequenceNumber: r.sequenceNumber,
        partitionKey: 'pk',
        data: r.data,
        arrivedAt: r.approximateArrivalTimestamp,
        streamArn: 'arn:aws:kinesis:us-east-1:123456789012:stream/traces',
        region: 'us-east-1',
      }),
    ),
  };
}

/** Decompressors the hyparquet reader lacks; a test may add its own. */
export type Decompressors = NonNullable<Parameters<typeof parquetReadObjects>[0]['compressors']>;

const nodeZstdDecompress = (zlib as { zstdDecompressSync?: (input: Uint8Array) => Uint8Array }).zstdDecompressSync;

/**
 * Rows of a Parquet body, read with hyparquet (the reader of the writer's family; integration tests read with
 * DuckDB). hyparquet reads only Snappy by itself; GZIP and ZSTD are node:zlib's.
 */
export async function parquetRows(body: Uint8Array, compressors: Decompressors = {}): Promise<Record<string, unknown>[]> {
  const file = body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer;
  const fromNode: Decompressors = { GZIP: (input) => gunzipSync(input), ...(nodeZstdDecompress ? { ZSTD: (input) => nodeZstdDecompress(input) } : {}) };
  return (await parquetReadObjects({ file, compressors: { ...fromNode, ...compressors } })) as Record<string, unknown>[];
}
