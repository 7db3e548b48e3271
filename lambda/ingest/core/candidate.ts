/**
 * What both routes hand the ingest core: the traces they decoded from their own wire format, each
 * validated once by the core against the one JSON Schema (`validation/trace.schema.json`).
 */
export interface CandidateTrace {
  /**
   * The TraceIngest object: as the client sent it (the JSON route), or as the OTLP route built it from
   * an export's spans. Unknown until validated: the schema and the rules decide what it is.
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
   * True when no string of the trace can hold a lone surrogate: its text was decoded as strict UTF-8 (or checked
   * with `isWellFormed`) and holds no surrogate escape (`mayHoldLoneSurrogates`), or it came from protobuf
   * strings, which are UTF-8 by definition. Validation then skips the `lone_surrogate` checks of the trace's own
   * strings (the tags it parses out of `attributes` are checked anyway). Absent or false: every string is checked.
   */
  readonly wellFormedText?: boolean;
  /** What the route wrote itself, and so is not checked a second time. Absent: the client wrote all of it. */
  readonly written?: RouteWritten;
}

/**
 * Facts a route knows about a trace because it wrote those members itself: they are what validation
 * would otherwise re-derive by parsing text the route has just serialised.
 */
export interface RouteWritten {
  /**
   * Every `input`, `output` and `attributes` text of the trace and its spans is JSON the route wrote with
   * `JSON.stringify` or parsed itself (and `attributes` a JSON object whose `tags`, when present, is a list of
   * well-formed strings), or is a text nested deeper than the limit, which validation still refuses (`too_deep`).
   */
  readonly jsonTexts: true;
  /** The trace's `timestamp` in microseconds since the epoch, which the route formatted from it. */
  readonly traceMicros: number;
  /** Each span's `timestamp` in microseconds, in span order. */
  readonly spanMicros: readonly number[];
}
