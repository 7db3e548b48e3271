/**
 * Stable, documented codes of per-trace validation issues (docs/contract.md §3). Clients may switch on
 * them; a code is never renamed or reused for another meaning.
 */
export const ISSUE_CODES = {
  required: 'a required member (trace `timestamp`, span `timestamp` or `name`) is missing or null',
  invalid_type: 'the member has the wrong JSON type (no coercion: "5" is not an integer; numbers must be finite)',
  invalid_enum: '`kind` or `status` is not one of the listed lower-case values',
  invalid_uuid: '`trace_id`, `span_id` or `parent_span_id` is not a UUID in 8-4-4-4-12 hex form',
  invalid_timestamp: 'not an ISO 8601 date-time with `T`, optional fraction and `Z`/`±HH:MM` offset, or not a real date',
  timestamp_out_of_range: 'the timestamp is more than 24 hours from the server clock',
  out_of_range: 'a number is negative, or a token count is above 2^53−1',
  too_long: 'a string member is longer than 1,024 characters',
  not_json_string: '`input`, `output` or `attributes` is a string that does not hold JSON text',
  not_json_object: '`attributes` holds JSON that is not an object',
  too_deep: '`input`, `output` or `attributes` holds JSON text that nests arrays and objects deeper than MAX_JSON_TEXT_DEPTH (128) levels',
  invalid_tags: '`attributes.tags` is present but not an array of strings',
  duplicate_span_id: 'two spans of the trace share a `span_id`',
  invalid_parent: '`parent_span_id` equals the span\'s own `span_id`',
  not_an_object: 'the trace or span is not a JSON object',
  too_many_spans: 'the trace has more spans than the per-trace limit (MAX_SPANS_PER_TRACE)',
  lone_surrogate: 'a string (or a tag inside `attributes`) holds a UTF-16 surrogate without its pair, which UTF-8 storage cannot keep',
  duplicate_trace_id: 'the `trace_id` repeats that of a trace accepted earlier in the same batch',
} as const;

export type IssueCode = keyof typeof ISSUE_CODES;

export interface ValidationIssue {
  /** JSON Pointer inside the trace. */
  path: string;
  code: IssueCode;
  message: string;
}

export const MAX_ISSUES_PER_TRACE = 20;

/**
 * Spans one trace may carry. Quotas count traces, so without it one small gzip request could make
 * the landing build hundreds of thousands of span rows from a single record.
 */
export const MAX_SPANS_PER_TRACE = 10_000;
