import { isJsonObject } from '../../../shared/domain/json.js';
import type { AcceptedTrace } from '../../../shared/domain/trace.js';
import type { TraceDraft } from '../draft.js';
import { echo } from '../echo.js';
import type { DroppedSpans, TraceError } from '../ingest-types.js';
import type { ValidationIssue } from './issue-codes.js';
import { validateDraft } from './validate-trace.js';

/** The server's id generator for the trace at `index` (ids a client left out). */
export type IdSource = (index: number) => () => string;

/** A candidate that passed, normalized, with where it stood in the request. */
export interface ValidTrace {
  /** Index of the candidate in the request. */
  index: number;
  trace: AcceptedTrace;
  spansOnly: boolean;
}

/**
 * Check 8: validates each candidate once, on its own; a bad trace is reported, the others go on. A trace
 * whose `trace_id` repeats one accepted earlier in the batch is rejected (`duplicate_trace_id`). Yields
 * each valid trace as soon as it is validated, so the caller can encode it while the normalized copy is young.
 */
export class CandidateValidation {
  readonly errors: TraceError[] = [];
  readonly droppedSpans: DroppedSpans[] = [];
  private readonly acceptedAt = new Map<string, number>();

  constructor(
    private readonly receivedAtMicros: number,
    private readonly ids: IdSource,
  ) {}

  *validTraces(candidates: readonly TraceDraft[]): Generator<ValidTrace> {
    for (let index = 0; index < candidates.length; index++) {
      const candidate = candidates[index] as TraceDraft;
      const result = validateDraft(candidate, this.receivedAtMicros, this.ids(index));
      const firstIndex = result.ok ? this.acceptedAt.get(result.trace.trace_id) : undefined;
      if (result.ok && firstIndex === undefined) {
        this.acceptedAt.set(result.trace.trace_id, index);
        if (result.droppedSpans.length > 0) this.droppedSpans.push({ index, spans: result.droppedSpans });
        yield { index, trace: result.trace, spansOnly: candidate.spansOnly };
      } else {
        const input = candidate.trace;
        const sentId = isJsonObject(input) && typeof input.trace_id === 'string' ? echo(input.trace_id) : null;
        this.errors.push({ index, trace_id: sentId, issues: result.ok ? [duplicateTraceId(firstIndex as number)] : result.issues });
      }
    }
  }
}

// One rule at every size: two traces of a batch with one trace_id would otherwise land as two rows
// (inline) or as one trace's content twice (by reference), and collapse into one in compacted tables.
function duplicateTraceId(firstIndex: number): ValidationIssue {
  return { path: '/trace_id', code: 'duplicate_trace_id', message: `repeats the trace_id of trace ${firstIndex}, accepted earlier in this batch` };
}
