import type { AcceptedTrace, TraceContext } from '../../shared/domain/trace.js';
import {
  compressRecordJson,
  MAX_INLINE_RECORD_BYTES,
  overflowObjectKey,
  TRACE_RECORD_VERSION,
  type TraceReferenceRecord,
} from '../../shared/domain/trace-record.js';
import type { OverflowStore, StreamRecord, TraceSink } from '../ports.js';

/**
 * Puts the accepted traces on the stream, all or an error. A trace too large for one record goes
 * to S3 first and the stream carries a pointer to it.
 */
export async function publishTraces(ports: { sink: TraceSink; overflow: OverflowStore }, traces: readonly EncodedTrace[], signal?: AbortSignal): Promise<void> {
  await ports.sink.publish(await Promise.all(traces.map((trace) => toStreamRecord(ports.overflow, trace))), { signal });
}

async function toStreamRecord(overflow: OverflowStore, { context, index, traceId, data }: EncodedTrace): Promise<StreamRecord> {
  if (data.byteLength + traceId.length <= MAX_INLINE_RECORD_BYTES) return { partitionKey: traceId, data };
  const stored = await overflow.put(overflowObjectKey(context, index, traceId), data);
  const pointer: TraceReferenceRecord = {
    v: TRACE_RECORD_VERSION,
    context,
    ref: { ...stored, bytes: data.byteLength, trace_id: traceId },
  };
  return { partitionKey: traceId, data: compressRecordJson(JSON.stringify(pointer)) };
}

/** An accepted trace, already serialised and compressed as its stream record. */
export interface EncodedTrace {
  context: TraceContext;
  /** Index of the trace in the request's `traces`. */
  index: number;
  traceId: string;
  data: Buffer;
}

/** The context every trace of one request shares; each trace adds its own workspace. */
export type RequestContext = Omit<TraceContext, 'workspace_slug' | 'record_id'>;

/**
 * Encodes a trace as soon as it validates, so the normalized copy dies young instead of outliving
 * the reserve (less handler CPU on a full batch), at the price of encoding a batch the rate windows
 * then refuse.
 */
export function encodeTrace(
  requestContext: RequestContext,
  requestIdentity: string,
  index: number,
  trace: AcceptedTrace,
  spansOnly = false,
): EncodedTrace {
  const context: TraceContext = { ...requestContext, workspace_slug: trace.workspace_slug, record_id: `${requestIdentity}/${index}` };
  if (spansOnly) context.spans_only = true;
  return { context, index, traceId: trace.trace_id, data: compressRecordJson(JSON.stringify({ v: TRACE_RECORD_VERSION, context, trace })) };
}
