import { describeValue } from '../shared/domain/describe-value.js';
import { exceedsContainerLimit, exceedsDepthLimit } from '../shared/domain/json-limits.js';
import type { AcceptedTrace, TraceContext } from '../shared/domain/trace.js';
import { type ColumnType, type LandableTrace, type LandedColumn, type LandedDataset, SPANS, type SpanRowSource, TRACES } from '../datasets/registry.js';

/** A record the consumer cannot land as it is (a permanent condition: retrying cannot help). */
export class UnlandableRecordError extends Error {
  override name = 'UnlandableRecordError';
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
    throw new UnlandableRecordError(`${path} is not a UTC timestamp: ${describeValue(value)}`);
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
  // Validation refuses such text (`too_deep`, or the body's container limit); a record an older version
  // accepted keeps its attributes as stored, without tags, rather than take the consumer past its memory.
  if (exceedsDepthLimit(attributes) || exceedsContainerLimit(attributes)) return NO_TAGS;
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

type Accessor = (t: LandableTrace, spanIndex: number) => unknown;

/** What is said of a value that is not of its column's type. */
const TYPE_PROBLEMS: Record<ColumnType, string> = {
  string: 'is not a string',
  nullable_string: 'is neither a string nor null',
  int32: 'is not a 32-bit integer',
  int64: 'is not a safe integer',
  double: 'is not a finite number',
  timestamp: 'is not a timestamp',
  string_list: 'is not a list of strings',
};

/** Whether a value is what a column of each type holds. */
const TYPE_CHECKS: Record<ColumnType, (value: unknown) => boolean> = {
  string: (value) => typeof value === 'string',
  nullable_string: (value) => value === null || typeof value === 'string',
  int32: (value) => Number.isInteger(value) && (value as number) >= -(2 ** 31) && (value as number) < 2 ** 31,
  int64: (value) => Number.isSafeInteger(value),
  double: (value) => typeof value === 'number' && Number.isFinite(value),
  timestamp: (value) => typeof value === 'bigint',
  string_list: (value) => Array.isArray(value) && value.every((item) => typeof item === 'string'),
};

/**
 * The test of a row against `columns`: their accessors grouped by column type, each group tested by a loop of
 * its own with the type's test written in it (this runs for every span).
 */
function rowTest(columns: readonly LandedColumn<SpanRowSource>[]): RowTest {
  const of = (type: ColumnType): Accessor[] => columns.filter((column) => column.type === type).map((column) => column.value);
  const byType: Record<ColumnType, Accessor[]> = {
    string: of('string'),
    nullable_string: of('nullable_string'),
    int32: of('int32'),
    int64: of('int64'),
    double: of('double'),
    timestamp: of('timestamp'),
    string_list: of('string_list'),
  };
  // Which column failed is looked for only once a row has failed.
  const failure = (t: LandableTrace, spanIndex: number): string => {
    const failed = columns.find((column) => !TYPE_CHECKS[column.type](column.value(t, spanIndex)))!;
    return `${failed.name} ${TYPE_PROBLEMS[failed.type]}`;
  };
  return (t, i) => {
    for (const value of byType.string) if (typeof value(t, i) !== 'string') return failure(t, i);
    for (const value of byType.nullable_string) {
      const text = value(t, i);
      if (text !== null && typeof text !== 'string') return failure(t, i);
    }
    for (const value of byType.int64) if (!Number.isSafeInteger(value(t, i))) return failure(t, i);
    for (const value of byType.double) {
      const number = value(t, i);
      if (typeof number !== 'number' || !Number.isFinite(number)) return failure(t, i);
    }
    for (const value of byType.timestamp) if (typeof value(t, i) !== 'bigint') return failure(t, i);
    for (const value of byType.int32) if (!TYPE_CHECKS.int32(value(t, i))) return failure(t, i);
    for (const value of byType.string_list) if (!TYPE_CHECKS.string_list(value(t, i))) return failure(t, i);
    return undefined;
  };
}

/**
 * The check of a dataset's rows, from the registry: a column added to it is checked with no change here. An
 * accessor that does not take the span index (`(t) => …`, a trace-level value such as `request_id`) gives one
 * value per trace: `perTrace` tests those once, `perRow` the others for every row.
 */
function rowCheck(dataset: LandedDataset<SpanRowSource>): { perTrace: RowTest; perRow: RowTest } {
  return {
    perTrace: rowTest(dataset.columns.filter((column) => column.value.length < 2)),
    perRow: rowTest(dataset.columns.filter((column) => column.value.length >= 2)),
  };
}

type RowTest = (t: LandableTrace, spanIndex: number) => string | undefined;

const TRACE_CHECK = rowCheck(TRACES);
const SPAN_CHECK = rowCheck(SPANS);

/**
 * Checks the shape the row builders rely on: every column of both datasets (lambda/datasets/registry.ts) takes a value
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
  const problemOfTrace = TRACE_CHECK.perTrace(landable, 0) ?? TRACE_CHECK.perRow(landable, 0) ?? (spanCount > 0 ? SPAN_CHECK.perTrace(landable, 0) : undefined);
  if (problemOfTrace !== undefined) throw new UnlandableRecordError(`/${problemOfTrace}`);
  for (let index = 0; index < spanCount; index++) {
    const problem = SPAN_CHECK.perRow(landable, index);
    if (problem !== undefined) throw new UnlandableRecordError(`/spans/${index}/${problem}`);
  }
  return landable;
}
