import { type TraceRecord, TraceRecordDecodeError, decodeTraceRecord, isReferenceRecord } from '../../shared/domain/trace-record.js';
import type { LandingRecord } from '../landing-types.js';
import type { LandableTrace } from '../../datasets/registry.js';
import { UnlandableRecordError, toLandableTrace } from '../landable-trace.js';
import { type LandingStore, ReferencedObjectNotFoundError } from '../ports.js';

/** A record read as the trace it lands, or the reason it never can be (it is dead-lettered). */
export type ResolvedRecord = { ok: true; trace: LandableTrace } | { ok: false; reason: string };

/**
 * Decodes one record and, for a reference to an oversized trace, reads the trace from the bucket.
 * A permanent problem (undecodable, a broken reference, a missing object) is an answer, not an
 * error; anything else (a throttled read) throws so that the batch is retried.
 */
export async function resolveRecord(store: LandingStore, record: LandingRecord): Promise<ResolvedRecord> {
  try {
    let decoded: TraceRecord = decodeTraceRecord(record.data);
    if (isReferenceRecord(decoded)) {
      const { ref } = decoded;
      const body = decodeTraceRecord(await store.getObject(ref.bucket, ref.key));
      if (isReferenceRecord(body)) throw new UnlandableRecordError(`referenced object s3://${ref.bucket}/${ref.key} holds another reference`);
      if (body.trace.trace_id !== ref.trace_id) {
        throw new UnlandableRecordError(`referenced object holds trace ${body.trace.trace_id}, the pointer names ${ref.trace_id}`);
      }
      decoded = { v: decoded.v, context: decoded.context, trace: body.trace };
    }
    return { ok: true, trace: toLandableTrace(decoded.context, decoded.trace) };
  } catch (error) {
    if (error instanceof TraceRecordDecodeError || error instanceof UnlandableRecordError || error instanceof ReferencedObjectNotFoundError) {
      return { ok: false, reason: `${error.name}: ${error.message}` };
    }
    throw error;
  }
}
