import type { AcceptedTrace, TraceContext } from '../../shared/domain/trace.js';
import { compressRecordJson, TRACE_RECORD_VERSION } from '../../shared/domain/trace-record.js';

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
