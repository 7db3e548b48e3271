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
  timestampMicros: bigint;
  receivedAtMicros: bigint;
  tags: string[];
  spanTimestampMicros: bigint[];
  spanTags: string[][];
}

const TIMESTAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}):(\d{2})(?:\.(\d{1,9}))?Z$/;

// Timestamps of one trace's spans mostly share their minute: parse it once.
let cachedMinute = '';
let cachedMinuteMillis = NaN;

/** Microseconds since the epoch of a normalized UTC timestamp (`2026-11-22T10:00:00.123456Z`). */
export function timestampMicros(value: unknown, path: string): bigint {
  const match = typeof value === 'string' ? TIMESTAMP.exec(value) : null;
  if (match && match[1] !== cachedMinute) {
    cachedMinute = match[1]!;
    cachedMinuteMillis = Date.parse(`${cachedMinute}:00Z`);
  }
  const seconds = match ? Number(match[2]) : NaN;
  if (!match || Number.isNaN(cachedMinuteMillis) || !(seconds < 60)) {
    throw new UnlandableRecordError(`${path} is not a UTC timestamp: ${JSON.stringify(value)}`);
  }
  const fraction = Number((match[3] ?? '').padEnd(6, '0').slice(0, 6));
  const micros = (cachedMinuteMillis + seconds * 1000) * 1000 + fraction;
  // Exact as a double until the year 2255; beyond that, in BigInt arithmetic.
  return Number.isSafeInteger(micros) ? BigInt(micros) : BigInt(cachedMinuteMillis + seconds * 1000) * 1000n + BigInt(fraction);
}

/** The `tags` member of a JSON-object attributes string; `[]` when absent or not a list. */
export function tagsOf(attributes: string): string[] {
  if (!attributes.includes('"tags"')) return [];
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

function checkNumbers(subject: AcceptedTrace | AcceptedSpan, path: string): void {
  check(typeof subject.duration_ms === 'number' && Number.isFinite(subject.duration_ms), () => `${path}/duration_ms is not a finite number`);
  for (const field of TOKENS) {
    check(Number.isSafeInteger(subject[field]), () => `${path}/${field} is not a safe integer`);
  }
}

/** Checks the shape the row builders rely on; throws {@link UnlandableRecordError} with the first problem. */
export function toLandableTrace(context: TraceContext, trace: AcceptedTrace): LandableTrace {
  for (const field of CONTEXT_STRINGS) check(typeof context[field] === 'string', () => `context/${field} is not a string`);
  check(/^[^/=]+$/.test(context.org_id), () => `context/org_id ${JSON.stringify(context.org_id)} cannot name a partition`);
  for (const field of TRACE_STRINGS) check(typeof trace[field] === 'string', () => `/${field} is not a string`);
  checkNumbers(trace, '');
  check(Array.isArray(trace.spans), () => '/spans is not an array');
  const timestamp = timestampMicros(trace.timestamp, '/timestamp');
  const spanTimestampMicros: bigint[] = [];
  const spanTags: string[][] = [];
  trace.spans.forEach((span, index) => {
    const path = `/spans/${index}`;
    check(typeof span === 'object' && span !== null, () => `${path} is not an object`);
    for (const field of SPAN_STRINGS) check(typeof span[field] === 'string', () => `${path}/${field} is not a string`);
    for (const field of SPAN_NULLABLE_STRINGS) {
      check(span[field] === null || typeof span[field] === 'string', () => `${path}/${field} is neither a string nor null`);
    }
    checkNumbers(span, path);
    spanTimestampMicros.push(timestampMicros(span.timestamp, `${path}/timestamp`));
    spanTags.push(tagsOf(span.attributes));
  });
  return {
    context,
    trace,
    dt: trace.timestamp.slice(0, 10),
    timestampMicros: timestamp,
    receivedAtMicros: timestampMicros(context.received_at, 'context/received_at'),
    tags: tagsOf(trace.attributes),
    spanTimestampMicros,
    spanTags,
  };
}
