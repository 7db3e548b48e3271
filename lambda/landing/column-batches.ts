import type { LandableTrace } from './landable-trace.js';

/** The values of one column for a run of rows, typed for the Parquet writer. */
export type ColumnValues = string[] | (string | null)[] | Int32Array | BigInt64Array | Float64Array | string[][];

/** A run of rows of one dataset, column by column in the dataset's column order. */
export interface ColumnBatch {
  rows: number;
  columns: ColumnValues[];
}

/** Rows per row group: large enough for Athena's scans, small enough to keep the encoder's memory flat. */
export const DEFAULT_ROWS_PER_BATCH = 10_000;

/** Trace rows in batches of at most `rowsPerBatch`, in the order of `traces`. */
export function* traceBatches(traces: readonly LandableTrace[], rowsPerBatch = DEFAULT_ROWS_PER_BATCH): Generator<ColumnBatch> {
  for (let start = 0; start < traces.length; start += rowsPerBatch) {
    const chunk = traces.slice(start, start + rowsPerBatch);
    const n = chunk.length;
    const str = (pick: (t: LandableTrace) => string) => chunk.map(pick);
    const int64 = (pick: (t: LandableTrace) => number) => BigInt64Array.from(chunk, (t) => BigInt(pick(t)));
    yield {
      rows: n,
      columns: [
        str((t) => t.trace.trace_id),
        BigInt64Array.from(chunk, (t) => t.timestampMicros),
        str((t) => t.trace.environment),
        str((t) => t.context.workspace_slug),
        Float64Array.from(chunk, (t) => t.trace.duration_ms),
        str((t) => t.trace.root_span_name),
        str((t) => t.trace.status),
        str((t) => t.trace.model),
        int64((t) => t.trace.input_tokens),
        int64((t) => t.trace.output_tokens),
        int64((t) => t.trace.total_tokens),
        str((t) => t.trace.attributes),
        chunk.map((t) => t.tags),
        str((t) => t.trace.session_id),
        str((t) => t.trace.agent_id),
        str((t) => t.trace.agent_name),
        str((t) => t.trace.user_id),
        Int32Array.from(chunk, (t) => t.trace.spans.length),
        str((t) => t.context.api_key_id),
        str((t) => t.context.request_id),
        BigInt64Array.from(chunk, (t) => t.receivedAtMicros),
      ],
    };
  }
}

class SpanBatchBuilder {
  rows = 0;
  readonly traceId: string[] = [];
  readonly spanIndex: Int32Array;
  readonly spanId: string[] = [];
  readonly parentSpanId: (string | null)[] = [];
  readonly timestamp: BigInt64Array;
  readonly duration: Float64Array;
  readonly name: string[] = [];
  readonly kind: string[] = [];
  readonly status: string[] = [];
  readonly model: string[] = [];
  readonly inputTokens: BigInt64Array;
  readonly outputTokens: BigInt64Array;
  readonly totalTokens: BigInt64Array;
  readonly input: string[] = [];
  readonly output: string[] = [];
  readonly attributes: string[] = [];
  readonly tags: string[][] = [];
  readonly errorMessage: (string | null)[] = [];
  readonly sessionId: string[] = [];
  readonly agentId: string[] = [];
  readonly agentName: string[] = [];
  readonly userId: string[] = [];
  readonly environment: string[] = [];
  readonly workspaceSlug: string[] = [];
  readonly apiKeyId: string[] = [];
  readonly requestId: string[] = [];
  readonly receivedAt: BigInt64Array;

  constructor(readonly capacity: number) {
    this.spanIndex = new Int32Array(capacity);
    this.timestamp = new BigInt64Array(capacity);
    this.duration = new Float64Array(capacity);
    this.inputTokens = new BigInt64Array(capacity);
    this.outputTokens = new BigInt64Array(capacity);
    this.totalTokens = new BigInt64Array(capacity);
    this.receivedAt = new BigInt64Array(capacity);
  }

  add(t: LandableTrace, index: number): void {
    const span = t.trace.spans[index]!;
    const row = this.rows++;
    this.traceId.push(t.trace.trace_id);
    this.spanIndex[row] = index;
    this.spanId.push(span.span_id);
    this.parentSpanId.push(span.parent_span_id);
    this.timestamp[row] = t.spanTimestampMicros[index]!;
    this.duration[row] = span.duration_ms;
    this.name.push(span.name);
    this.kind.push(span.kind);
    this.status.push(span.status);
    this.model.push(span.model);
    this.inputTokens[row] = BigInt(span.input_tokens);
    this.outputTokens[row] = BigInt(span.output_tokens);
    this.totalTokens[row] = BigInt(span.total_tokens);
    this.input.push(span.input);
    this.output.push(span.output);
    this.attributes.push(span.attributes);
    this.tags.push(t.spanTags[index]!);
    this.errorMessage.push(span.error_message);
    this.sessionId.push(span.session_id);
    this.agentId.push(span.agent_id);
    this.agentName.push(span.agent_name);
    this.userId.push(span.user_id);
    this.environment.push(t.trace.environment);
    this.workspaceSlug.push(t.context.workspace_slug);
    this.apiKeyId.push(t.context.api_key_id);
    this.requestId.push(t.context.request_id);
    this.receivedAt[row] = t.receivedAtMicros;
  }

  build(): ColumnBatch {
    const n = this.rows;
    return {
      rows: n,
      columns: [
        this.traceId,
        this.spanIndex.subarray(0, n),
        this.spanId,
        this.parentSpanId,
        this.timestamp.subarray(0, n),
        this.duration.subarray(0, n),
        this.name,
        this.kind,
        this.status,
        this.model,
        this.inputTokens.subarray(0, n),
        this.outputTokens.subarray(0, n),
        this.totalTokens.subarray(0, n),
        this.input,
        this.output,
        this.attributes,
        this.tags,
        this.errorMessage,
        this.sessionId,
        this.agentId,
        this.agentName,
        this.userId,
        this.environment,
        this.workspaceSlug,
        this.apiKeyId,
        this.requestId,
        this.receivedAt.subarray(0, n),
      ],
    };
  }
}

/** Span rows in batches of at most `rowsPerBatch`: traces in order, each trace's spans in order. */
export function* spanBatches(traces: readonly LandableTrace[], rowsPerBatch = DEFAULT_ROWS_PER_BATCH): Generator<ColumnBatch> {
  let builder = new SpanBatchBuilder(rowsPerBatch);
  for (const t of traces) {
    for (let index = 0; index < t.trace.spans.length; index++) {
      builder.add(t, index);
      if (builder.rows === rowsPerBatch) {
        yield builder.build();
        builder = new SpanBatchBuilder(rowsPerBatch);
      }
    }
  }
  if (builder.rows > 0) yield builder.build();
}
