import { isJsonObject } from '../../../shared/domain/json.js';
import { echo } from '../echo.js';
import type { TraceError } from '../ingest-types.js';
import type { ValidationIssue } from './issue-codes.js';
import { type TraceValidation, validateTrace } from './validate-trace.js';
import { type EncodedTrace, encodeTrace, type RequestContext } from '../publish/publish-traces.js';

/** How a wire format other than the JSON batch hands its traces over. */
export interface TraceOptions {
  /** Marks a trace whose row comes from another request (OTLP), so that only its spans land. */
  spansOnly?: (index: number) => boolean;
  /**
   * `validateTrace`, or a caller's memo of it for traces it already ran through `validateTrace`
   * (the OTLP route validates while it sorts out invalid spans): one validation, run once.
   */
  validate?: (input: unknown, receivedAtMicros: number, newId: () => string) => TraceValidation;
}

/** The server's id generator for the trace at `index` (ids a client left out). */
export type IdSource = (index: number) => () => string;

export interface ValidatedBatch {
  /** The traces that passed, encoded for the stream, in batch order. */
  accepted: EncodedTrace[];
  /** One entry per rejected trace, for the 200's `errors`. */
  errors: TraceError[];
}

/**
 * Check 8: validates each trace on its own; a bad trace is reported, the others go on. A trace whose
 * `trace_id` repeats one accepted earlier in the batch is rejected (`duplicate_trace_id`). Each
 * accepted trace's record gets the identity `<requestIdentity>/<index>`.
 */
export function validateTraces(
  traces: readonly unknown[],
  requestContext: RequestContext,
  requestIdentity: string,
  receivedAtMicros: number,
  ids: IdSource,
  options: TraceOptions = {},
): ValidatedBatch {
  const spansOnly = options.spansOnly ?? (() => false);
  const validate = options.validate ?? validateTrace;
  const accepted: EncodedTrace[] = [];
  const errors: TraceError[] = [];
  const acceptedAt = new Map<string, number>();
  traces.forEach((input, index) => {
    const result = validate(input, receivedAtMicros, ids(index));
    const firstIndex = result.ok ? acceptedAt.get(result.trace.trace_id) : undefined;
    if (result.ok && firstIndex === undefined) {
      acceptedAt.set(result.trace.trace_id, index);
      accepted.push(encodeTrace(requestContext, requestIdentity, index, result.trace, spansOnly(index)));
    } else {
      const sentId = isJsonObject(input) && typeof input.trace_id === 'string' ? echo(input.trace_id) : null;
      errors.push({ index, trace_id: sentId, issues: result.ok ? [duplicateTraceId(firstIndex as number)] : result.issues });
    }
  });
  return { accepted, errors };
}

// One rule at every size: two traces of a batch with one trace_id would otherwise land as two rows
// (inline) or as one trace's content twice (by reference), and collapse into one in compacted tables.
function duplicateTraceId(firstIndex: number): ValidationIssue {
  return { path: '/trace_id', code: 'duplicate_trace_id', message: `repeats the trace_id of trace ${firstIndex}, accepted earlier in this batch` };
}
