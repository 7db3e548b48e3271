import type { JsonValue } from '../../shared/domain/json.js';
import type { SpanKind, Status } from '../../shared/domain/trace.js';

/**
 * A trace before validation, as a route hands it to the ingest core: the JSON route's trace as the client sent
 * it, or the trace the OTLP route built from an export's spans. Validation applies one set of rules to every
 * draft (the JSON Schema, `validation/trace.schema.json`, and `validation/trace-rules.ts`), whichever route made it.
 */
export interface TraceDraft {
  /**
   * The TraceIngest object. Its members are JSON values, as a client sent them, except those a route decoded into
   * what they mean: a {@link DecodedTime} for a timestamp, a {@link DecodedJson} or {@link JsonOrText} for a member
   * stored as JSON text. Validation checks a decoded member by the same rule as a sent one, without parsing text
   * to get at it, and writes the text it is stored as. Unknown until validated: a client may send anything.
   */
  readonly trace: unknown;
  /**
   * Its trace row belongs to another request, so only its spans land: an OTLP export that carries some
   * spans of a trace but not its root span.
   */
  readonly spansOnly: boolean;
  /**
   * What one invalid span does: `rejects-trace`, the whole trace is rejected (the JSON contract, docs/contract.md §3);
   * `drops-span`, that span is left out and reported, and the trace lands with its other spans (OTLP's
   * `partial_success`). Issues of the trace's own members reject the trace either way.
   */
  readonly invalidSpan: 'rejects-trace' | 'drops-span';
  /**
   * True when the request was decoded so that no string of it can hold a lone surrogate: strict UTF-8 without a
   * surrogate escape (`mayHoldLoneSurrogates`), or protobuf. Validation then skips the `lone_surrogate` checks of
   * the trace's own strings; the tags it finds in `attributes` are checked anyway. Absent or false: every string is.
   */
  readonly wellFormedText?: boolean;
}

/** A time a route decoded, in microseconds since the epoch: checked against the clock, stored as its ISO 8601 text. */
export class DecodedTime {
  constructor(readonly micros: number) {}
}

/** A JSON value a route decoded, for a member stored as JSON text: checked as its text would be, stored as `JSON.stringify` writes it. */
export class DecodedJson {
  constructor(readonly value: JsonValue) {}
}

/**
 * A string a route has as sent (an OTLP attribute holding a prompt) for a member stored as JSON text: kept as it is
 * when it is JSON text (it starts with `{`, `[` or `"` and parses), else stored as a JSON string holding it.
 */
export class JsonOrText {
  constructor(readonly text: string) {}
}

/** A member stored as JSON text (`input`, `output`, `attributes`), as a route that decodes its values hands it over. */
export type DecodedJsonText = DecodedJson | JsonOrText | '';

/** A SpanIngest object as a route that decodes its values builds it (the OTLP route). */
export interface SpanDraft {
  span_id: string;
  parent_span_id: string | null;
  timestamp: DecodedTime;
  duration_ms: number;
  name: string;
  kind: SpanKind;
  status: Status;
  model: string;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  input: DecodedJsonText;
  output: DecodedJsonText;
  attributes: DecodedJson;
  error_message: string | null;
  session_id: string;
  agent_id: string;
  agent_name: string;
  user_id: string;
}

/** A TraceIngest object as a route that decodes its values builds it (the OTLP route). */
export interface TraceMembersDraft {
  trace_id: string;
  timestamp: DecodedTime;
  environment: string;
  workspace_slug?: string;
  duration_ms: number;
  root_span_name: string;
  status: Status;
  model: string;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  attributes: DecodedJson;
  session_id: string;
  agent_id: string;
  agent_name: string;
  user_id: string;
  spans: SpanDraft[];
}
