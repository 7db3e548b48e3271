/** Domain types of an accepted trace: the shape after validation, with every default applied. */

export const SPAN_KINDS = ['llm', 'tool', 'chain', 'retriever', 'agent', 'custom'] as const;
export const STATUSES = ['ok', 'error', 'timeout'] as const;

export type SpanKind = (typeof SPAN_KINDS)[number];
export type Status = (typeof STATUSES)[number];

export interface AcceptedSpan {
  /** Lower-case UUID, generated when the client sent none. */
  span_id: string;
  parent_span_id: string | null;
  /** UTC, microsecond precision: `2026-11-22T10:00:00.123456Z`. */
  timestamp: string;
  duration_ms: number;
  name: string;
  kind: SpanKind;
  status: Status;
  model: string;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  /** `""` or JSON text. */
  input: string;
  /** `""` or JSON text. */
  output: string;
  /** JSON object text (`"{}"` when sent empty). */
  attributes: string;
  error_message: string | null;
  session_id: string;
  agent_id: string;
  agent_name: string;
  user_id: string;
}

export interface AcceptedTrace {
  /** Lower-case UUID, generated when the client sent none. */
  trace_id: string;
  /** UTC, microsecond precision: `2026-11-22T10:00:00.123456Z`. */
  timestamp: string;
  environment: string;
  workspace_slug: string;
  duration_ms: number;
  root_span_name: string;
  status: Status;
  model: string;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  /** JSON object text (`"{}"` when sent empty). */
  attributes: string;
  session_id: string;
  agent_id: string;
  agent_name: string;
  user_id: string;
  spans: AcceptedSpan[];
}

/** Server-side context published with every accepted trace. */
export interface TraceContext {
  org_id: string;
  /** The workspace the trace was accepted into (`""` for an org key and no slug). */
  workspace_slug: string;
  api_key_id: string;
  request_id: string;
  /** UTC, microsecond precision. */
  received_at: string;
  /**
   * The record's identity, `<request identity>/<index in the batch>`: the same for every copy of the
   * record (a resent PutRecords entry, a resend under the same Idempotency-Key), so copies collapse.
   * Absent on records written before it existed.
   */
  record_id?: string;
  /**
   * True when the record carries spans of a trace whose own row comes from another request (an
   * OTLP export without the trace's root span): its spans land, its `traces` row does not.
   */
  spans_only?: true;
}
