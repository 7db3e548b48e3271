import { compressRecordJson, MAX_INLINE_RECORD_BYTES, overflowObjectKey, TRACE_RECORD_VERSION, type TraceReferenceRecord } from '../../shared/domain/trace-record.js';
import type { OverflowStore, StreamRecord, TraceSink } from '../ports.js';
import type { EncodedTrace } from './encode-trace.js';

/**
 * Puts the accepted traces on the stream, all or an error. A trace too large for one record goes
 * to S3 first and the stream carries a pointer to it.
 */
export async function publishTraces(ports: { sink: TraceSink; overflow: OverflowStore }, traces: readonly EncodedTrace[]): Promise<void> {
  await ports.sink.publish(await Promise.all(traces.map((trace) => toStreamRecord(ports.overflow, trace))));
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
