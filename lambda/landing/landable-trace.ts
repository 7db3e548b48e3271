import type { AcceptedTrace, TraceContext } from '../shared/domain/trace.js';
import { type ColumnType, type LandedDataset, SPANS, type SpanRowSource, TRACES } from './landing-schema.js';

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

/** Shared by every row without tags, so that the common case allocates nothing (frozen: never to be mutated). */
const NO_TAGS = Object.freeze<string[]>([]) as string[];

/**
 * The `tags` member of a JSON-object attributes string, read as validation reads it (`JSON.parse`,
 * escapes such as `"t\\u0061gs"` included); `[]` when absent or not a list.
 */
export function tagsOf(attributes: unknown): string[] {
  // Without the word or any escape the text cannot name `tags`: skip the parse on the hot path.
  if (typeof attributes !== 'string' || (!attributes.includes('tags') && !attributes.includes('\\'))) return NO_TAGS;
  let parsed: unknown;
  try {
    parsed = JSON.parse(attributes);
  } catch {
    return NO_TAGS;
  }
  const tags = (parsed as { tags?: unknown } | null)?.tags;
  return Array.isArray(tags) ? tags.filter((tag): tag is string => typeof tag === 'string') : NO_TAGS;
}

const CONTEXT_STRINGS = ['org_id', 'workspace_slug', 'api_key_id', 'request_id'] as const;

function check(ok: boolean, reason: () => string): void {
  if (!ok) throw new UnlandableRecordError(reason());
}

/** What a value must be for a column of each type, and what is said when it is not. */
const TYPE_CHECKS: Record<ColumnType, { ok: (value: unknown) => boolean; problem: string }> = {
  string: { ok: (value) => typeof value === 'string', problem: 'is not a string' },
  nullable_string: { ok: (value) => value === null || typeof value === 'string', problem: 'is neither a string nor null' },
  int32: { ok: (value) => Number.isInteger(value) && (value as number) >= -(2 ** 31) && (value as number) < 2 ** 31, problem: 'is not a 32-bit integer' },
  int64: { ok: (value) => Number.isSafeInteger(value), problem: 'is not a safe integer' },
  double: { ok: (value) => typeof value === 'number' && Number.isFinite(value), problem: 'is not a finite number' },
  timestamp: { ok: (value) => typeof value === 'bigint', problem: 'is not a timestamp' },
  string_list: { ok: (value) => Array.isArray(value) && value.every((item) => typeof item === 'string'), problem: 'is not a list of strings' },
};

/**
 * The registry's accessors grouped by column type, each group checked by one tight loop: a column added to
 * the registry is checked with no change here.
 */
interface ColumnChecks {
  strings: { name: string; value: (t: LandableTrace, spanIndex: number) => unknown }[];
  others: { name: string; type: ColumnType; value: (t: LandableTrace, spanIndex: number) => unknown }[];
}

function columnChecks(dataset: LandedDataset<SpanRowSource>): ColumnChecks {
  return {
    strings: dataset.columns.filter((column) => column.type === 'string'),
    others: dataset.columns.filter((column) => column.type !== 'string'),
  };
}

const TRACE_CHECKS = columnChecks(TRACES);
const SPAN_CHECKS = columnChecks(SPANS);

/** The first column whose value the row's accessor takes is not of the column's type, as `<column> <problem>`. */
function rowProblem(checks: ColumnChecks, t: LandableTrace, spanIndex: number): string | undefined {
  for (const { name, value } of checks.strings) {
    if (typeof value(t, spanIndex) !== 'string') return `${name} ${TYPE_CHECKS.string.problem}`;
  }
  for (const { name, type, value } of checks.others) {
    const { ok, problem } = TYPE_CHECKS[type];
    if (!ok(value(t, spanIndex))) return `${name} ${problem}`;
  }
  return undefined;
}

/**
 * Checks the shape the row builders rely on: every column of both datasets (landing-schema.ts) takes a value
 * of its type from this trace and each of its spans. Throws {@link UnlandableRecordError} with the first problem
 * (`/spans/3/name is not a string`).
 */
export function toLandableTrace(context: TraceContext, trace: AcceptedTrace): LandableTrace {
  for (const field of CONTEXT_STRINGS) check(typeof context[field] === 'string', () => `context/${field} is not a string`);
  check(/^[^/=]+$/.test(context.org_id), () => `context/org_id ${JSON.stringify(context.org_id)} cannot name a partition`);
  check(Array.isArray(trace.spans), () => '/spans is not an array');
  const timestamp = timestampMicros(trace.timestamp, '/timestamp');
  const spanCount = trace.spans.length;
  const spanTimestampMicros = new Array<bigint>(spanCount);
  const spanTags = new Array<string[]>(spanCount);
  for (let index = 0; index < spanCount; index++) {
    const span = trace.spans[index];
    check(typeof span === 'object' && span !== null && !Array.isArray(span), () => `/spans/${index} is not an object`);
    spanTimestampMicros[index] = timestampMicros(span!.timestamp, `/spans/${index}/timestamp`);
    spanTags[index] = tagsOf(span!.attributes);
  }
  const landable: LandableTrace = {
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
  const traceProblem = rowProblem(TRACE_CHECKS, landable, 0);
  if (traceProblem !== undefined) throw new UnlandableRecordError(`/${traceProblem}`);
  for (let index = 0; index < spanCount; index++) {
    const problem = rowProblem(SPAN_CHECKS, landable, index);
    if (problem !== undefined) throw new UnlandableRecordError(`/spans/${index}/${problem}`);
  }
  return landable;
}
