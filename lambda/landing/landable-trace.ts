import type { AcceptedSpan, AcceptedTrace, TraceContext } from '../shared/domain/trace.js';

/** A record the consumer cannot land as it is (a permanent condition: retrying cannot help). */
export class UnlandableRecordError extends Error {
  override name = 'UnlandableRecordError';
}

/** An accepted trace checked and made ready for the row builders: timestamps parsed once, tags extracted. */
export interface LandableTrace {
  context: TraceContext;
  trace: AcceptedTrace;
  /** UTC date of the trace timestamp, the `dt` partition. */
  dt: string;
  /** UTC hour (`00`–`23`) of the trace timestamp, the `hour` partition. */
  hour: string;
  timestampMicros: bigint;
  receivedAtMicros: bigint;
  tags: string[];
  spanTimestampMicros: bigint[];
  spanTags: string[][];
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z$/;
const MINUTE_LENGTH = 'YYYY-MM-DDTHH:MM'.length;

// Timestamps of one trace's spans mostly share their minute: parse it once. The digits after it are read
// by char code: a regex match and Number() per part cost more than the rest of the shape check.
let cachedMinute = '\0';
let cachedMinuteMillis = NaN;

function digit(value: string, index: number): number {
  return value.charCodeAt(index) - 48;
}

/** Microseconds since the epoch of a normalized UTC timestamp (`2026-11-22T10:00:00.123456Z`). */
export function timestampMicros(value: unknown, path: string): bigint {
  const valid = typeof value === 'string' && TIMESTAMP.test(value);
  if (valid && !value.startsWith(cachedMinute)) {
    cachedMinute = value.slice(0, MINUTE_LENGTH);
    cachedMinuteMillis = Date.parse(`${cachedMinute}:00Z`);
  }
  const seconds = valid ? digit(value, 17) * 10 + digit(value, 18) : NaN;
  if (!valid || Number.isNaN(cachedMinuteMillis) || !(seconds < 60)) {
    throw new UnlandableRecordError(`${path} is not a UTC timestamp: ${JSON.stringify(value)}`);
  }
  // Microseconds: the first six digits after the dot (index 20 on), zeros where there are fewer.
  let fraction = 0;
  for (let i = 20; i < 26; i++) fraction = fraction * 10 + (i < value.length - 1 ? digit(value, i) : 0);
  const micros = (cachedMinuteMillis + seconds * 1000) * 1000 + fraction;
  // Exact as a double until the year 2255; beyond that, in BigInt arithmetic.
  return Number.isSafeInteger(micros) ? BigInt(micros) : BigInt(cachedMinuteMillis + seconds * 1000) * 1000n + BigInt(fraction);
}

/**
 * The `tags` member of a JSON-object attributes string, read as validation reads it (`JSON.parse`,
 * escapes such as `"t\\u0061gs"` included); `[]` when absent or not a list.
 */
export function tagsOf(attributes: string): string[] {
  // Without the word or any escape the text cannot name `tags`: skip the parse on the hot path.
  if (!attributes.includes('tags') && !attributes.includes('\\')) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(attributes);
  } catch {
    return [];
  }
  const tags = (parsed as { tags?: unknown } | null)?.tags;
  return Array.isArray(tags) ? tags.filter((tag): tag is string => typeof tag === 'string') : [];
}

const TRACE_STRINGS = ['trace_id', 'environment', 'workspace_slug', 'root_span_name', 'status', 'model', 'attributes', 'session_id', 'agent_id', 'agent_name', 'user_id'] as const;
const SPAN_STRINGS = ['span_id', 'name', 'kind', 'status', 'model', 'input', 'output', 'attributes', 'session_id', 'agent_id', 'agent_name', 'user_id'] as const;
const SPAN_NULLABLE_STRINGS = ['parent_span_id', 'error_message'] as const;
const TOKENS = ['input_tokens', 'output_tokens', 'total_tokens'] as const;
const CONTEXT_STRINGS = ['org_id', 'workspace_slug', 'api_key_id', 'request_id'] as const;

function check(ok: boolean, reason: () => string): void {
  if (!ok) throw new UnlandableRecordError(reason());
}

/** What is wrong with `duration_ms` and the token counts (the first problem, after the subject's path), if anything. */
function numbersProblem(subject: AcceptedTrace | AcceptedSpan): string | undefined {
  if (typeof subject.duration_ms !== 'number' || !Number.isFinite(subject.duration_ms)) return '/duration_ms is not a finite number';
  for (const field of TOKENS) {
    if (!Number.isSafeInteger(subject[field])) return `/${field} is not a safe integer`;
  }
  return undefined;
}

// Runs once per span: no closure or path string is built unless the span is wrong.
function spanProblem(span: AcceptedSpan): string | undefined {
  if (typeof span !== 'object' || span === null) return ' is not an object';
  for (const field of SPAN_STRINGS) {
    if (typeof span[field] !== 'string') return `/${field} is not a string`;
  }
  for (const field of SPAN_NULLABLE_STRINGS) {
    if (span[field] !== null && typeof span[field] !== 'string') return `/${field} is neither a string nor null`;
  }
  return numbersProblem(span);
}

/** Checks the shape the row builders rely on; throws {@link UnlandableRecordError} with the first problem. */
export function toLandableTrace(context: TraceContext, trace: AcceptedTrace): LandableTrace {
  for (const field of CONTEXT_STRINGS) check(typeof context[field] === 'string', () => `context/${field} is not a string`);
  check(/^[^/=]+$/.test(context.org_id), () => `context/org_id ${JSON.stringify(context.org_id)} cannot name a partition`);
  for (const field of TRACE_STRINGS) check(typeof trace[field] === 'string', () => `/${field} is not a string`);
  const traceProblem = numbersProblem(trace);
  if (traceProblem !== undefined) throw new UnlandableRecordError(traceProblem);
  check(Array.isArray(trace.spans), () => '/spans is not an array');
  const timestamp = timestampMicros(trace.timestamp, '/timestamp');
  const spanTimestampMicros: bigint[] = [];
  const spanTags: string[][] = [];
  trace.spans.forEach((span, index) => {
    const problem = spanProblem(span);
    if (problem !== undefined) throw new UnlandableRecordError(`/spans/${index}${problem}`);
    spanTimestampMicros.push(timestampMicros(span.timestamp, `/spans/${index}/timestamp`));
    spanTags.push(tagsOf(span.attributes));
  });
  return {
    context,
    trace,
    dt: trace.timestamp.slice(0, 10),
    hour: trace.timestamp.slice(11, 13),
    timestampMicros: timestamp,
    receivedAtMicros: timestampMicros(context.received_at, 'context/received_at'),
    tags: tagsOf(trace.attributes),
    spanTimestampMicros,
    spanTags,
  };
}
