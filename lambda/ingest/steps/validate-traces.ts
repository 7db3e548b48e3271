import { isJsonObject } from '../../shared/domain/json.js';
import { echo } from '../echo.js';
import type { TraceError } from '../ingest-types.js';
import { validateTrace } from '../validation/validate-trace.js';
import { type EncodedTrace, encodeTrace, type RequestContext } from './encode-trace.js';

export interface ValidatedBatch {
  /** The traces that passed, encoded for the stream, in batch order. */
  accepted: EncodedTrace[];
  /** One entry per rejected trace, for the 200's `errors`. */
  errors: TraceError[];
}

/** Check 8: validates each trace on its own; a bad trace is reported, the others go on. */
export function validateTraces(
  traces: readonly unknown[],
  requestContext: RequestContext,
  receivedAtMicros: number,
  newId: () => string,
): ValidatedBatch {
  const accepted: EncodedTrace[] = [];
  const errors: TraceError[] = [];
  traces.forEach((input, index) => {
    const result = validateTrace(input, receivedAtMicros, newId);
    if (result.ok) {
      accepted.push(encodeTrace(requestContext, result.trace));
    } else {
      const sentId = isJsonObject(input) && typeof input.trace_id === 'string' ? echo(input.trace_id) : null;
      errors.push({ index, trace_id: sentId, issues: result.issues });
    }
  });
  return { accepted, errors };
}
