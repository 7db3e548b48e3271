import { jsonTextVerdict } from '../../../shared/domain/json-text.js';
import { isJsonObject, type JsonObject } from '../../../shared/domain/json.js';
import { exceedsDepthLimit, MAX_JSON_TEXT_DEPTH } from '../../../shared/domain/json-limits.js';
import { DecodedJson, DecodedTime, JsonOrText, type TraceDraft } from '../draft.js';
import { MAX_SPANS_PER_TRACE, type ValidationIssue } from './issue-codes.js';
import { notJsonTextMessage } from './json-text-hints.js';
import { formatMicros, outsideDayOfClockMessage, parseTimestampMicros, withinDayOfClock } from './timestamps.js';

/**
 * The rules JSON Schema cannot say (docs/contract.md §3): timestamps that are real dates within ±24 hours
 * of the server clock, JSON held inside strings, unique span ids, a parent that is not the span
 * itself, no lone surrogates, a bounded span count. Each rule checks only values of the right type:
 * wrong types are the schema's to report.
 */

export interface RuleResult {
  issues: ValidationIssue[];
  /** Parsed timestamps, reused by normalization: the trace's, then each span's in order. */
  traceMicros: number | undefined;
  spanMicros: (number | undefined)[];
}

/** A client's timestamp text, or a route's {@link DecodedTime}, as microseconds if it is a valid one within a day of the clock. */
function checkTimestamp(value: unknown, path: string, nowMicros: number, issues: ValidationIssue[]): number | undefined {
  let micros: number | undefined;
  if (typeof value === 'string') micros = parseTimestampMicros(value);
  else if (value instanceof DecodedTime) micros = Number.isFinite(value.micros) && value.micros >= 0 ? value.micros : undefined;
  else return undefined;
  if (micros === undefined) {
    issues.push({ path, code: 'invalid_timestamp', message: 'must be an ISO 8601 date-time such as 2026-01-31T12:00:00.123Z' });
    return undefined;
  }
  if (!withinDayOfClock(micros, nowMicros)) {
    issues.push({ path, code: 'timestamp_out_of_range', message: outsideDayOfClockMessage(nowMicros) });
  }
  return micros;
}

/** The text a {@link DecodedTime} is stored as; no time at all (reported by {@link checkTimestamp}) as the number it is. */
const timeText = (time: DecodedTime, micros: number | undefined): string => (micros === undefined ? String(time.micros) : formatMicros(micros));

const NOT_JSON = Symbol('not JSON');

/** The parsed value, or NOT_JSON; no wrapper object, since this runs for every span's input and output. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
}

const TOO_DEEP_MESSAGE = `must not nest arrays and objects deeper than ${MAX_JSON_TEXT_DEPTH} levels`;

/** Refuses text nested too deep before it is parsed: JSON.parse would build all of it first. */
function tooDeep(value: string, path: string, issues: ValidationIssue[]): boolean {
  if (!exceedsDepthLimit(value)) return false;
  issues.push(tooDeepIssue(path));
  return true;
}

const tooDeepIssue = (path: string): ValidationIssue => ({ path, code: 'too_deep', message: TOO_DEEP_MESSAGE });
const notJsonIssue = (path: string, member: JsonTextMember, value: string): ValidationIssue => ({
  path,
  code: 'not_json_string',
  message: notJsonTextMessage(member, value),
});

/** {@link jsonTextVerdict} at the text depth limit, with `too_deep` reported at `path`. */
function textVerdict(text: string, path: string, issues: ValidationIssue[]): ReturnType<typeof jsonTextVerdict> {
  const verdict = jsonTextVerdict(text, MAX_JSON_TEXT_DEPTH);
  if (verdict === 'too_deep') issues.push(tooDeepIssue(path));
  return verdict;
}

/** A route's string is JSON text when it looks like a JSON object, array or string and parses. */
const looksLikeJson = (text: string): boolean => {
  const first = text.trimStart()[0];
  return first === '{' || first === '[' || first === '"';
};

type JsonTextMember = 'input' | 'output' | 'attributes';

/**
 * Checks a member stored as JSON text (`input`, `output`, `attributes`). A client's `attributes` text is parsed, its
 * `input` and `output` only scanned; a route's decoded member is not parsed: a {@link DecodedJson} is written with
 * `JSON.stringify`, a {@link JsonOrText} scanned once, here.
 * Either way the value meets the same rules. Returns the text a decoded member is stored as; `undefined` for a sent
 * one (stored as sent) and for the wrong type (the schema's to report).
 */
function checkJsonText(value: unknown, member: JsonTextMember, path: string, issues: ValidationIssue[]): string | undefined {
  let parsed: unknown;
  let stored: string | undefined;
  if (typeof value === 'string') {
    if (value === '') return undefined;
    if (member !== 'attributes') {
      // Only attributes' value is looked into; input and output need only be JSON text no deeper than the limit,
      // which one scan decides without building the message lists JSON.parse would.
      if (textVerdict(value, path, issues) === 'not_json') issues.push(notJsonIssue(path, member, value));
      return undefined;
    }
    if (tooDeep(value, path, issues)) return undefined;
    parsed = parseJson(value);
    if (parsed === NOT_JSON) {
      issues.push(notJsonIssue(path, member, value));
      return undefined;
    }
  } else if (value instanceof DecodedJson) {
    stored = JSON.stringify(value.value);
    if (tooDeep(stored, path, issues)) return stored;
    parsed = value.value;
  } else if (value instanceof JsonOrText) {
    // Only input and output come as text (core/draft.ts): decided as a client's text is, by one scan, and JSON
    // text stored as it is, never built. Plain text, also plain text that happens to start like JSON, is stored
    // as a JSON string holding it.
    if (looksLikeJson(value.text) && textVerdict(value.text, path, issues) !== 'not_json') return value.text;
    parsed = value.text;
    stored = JSON.stringify(value.text);
  } else {
    return undefined;
  }
  if (member === 'attributes') checkAttributes(parsed, path, issues);
  return stored;
}

/** `attributes` holds a JSON object whose `tags`, when present, is a list of well-formed strings. */
function checkAttributes(parsed: unknown, path: string, issues: ValidationIssue[]): void {
  if (!isJsonObject(parsed)) {
    issues.push({ path, code: 'not_json_object', message: 'must hold a JSON object, not another JSON value' });
  } else if ('tags' in parsed) {
    const tags = parsed.tags;
    if (!Array.isArray(tags) || !tags.every((tag) => typeof tag === 'string')) {
      issues.push({ path, code: 'invalid_tags', message: 'tags inside attributes must be an array of strings' });
    } else if (!tags.every(isWellFormed)) {
      // Only the tags leave the JSON text (as a list of UTF-8 strings); an escaped lone surrogate
      // elsewhere in the text is kept as the escape it is. Checked whatever `wellFormedText` says: that
      // covers the request's own strings, and JSON held in a string can spell its escapes with escapes.
      issues.push({ path, code: 'lone_surrogate', message: LONE_SURROGATE_MESSAGE });
    }
  }
}

/** String members that are stored as sent; ids, timestamps, enums and slugs have patterns that refuse surrogates anyway. */
const TRACE_TEXT = ['environment', 'root_span_name', 'model', 'attributes', 'session_id', 'agent_id', 'agent_name', 'user_id'] as const;
const SPAN_TEXT = ['name', 'model', 'input', 'output', 'attributes', 'error_message', 'session_id', 'agent_id', 'agent_name', 'user_id'] as const;
const LONE_SURROGATE_MESSAGE =
  'holds a UTF-16 surrogate without its pair (\\uD800-\\uDFFF), which cannot be stored as UTF-8; send the pair or escape it inside JSON text';

const isWellFormed = (text: string): boolean => text.isWellFormed();

function checkWellFormed(subject: JsonObject, members: readonly string[], base: string, issues: ValidationIssue[]): void {
  for (const member of members) {
    const value = subject[member];
    if (typeof value === 'string' && !isWellFormed(value)) {
      issues.push({ path: `${base}/${member}`, code: 'lone_surrogate', message: LONE_SURROGATE_MESSAGE });
    }
  }
}

/**
 * Checks the rules on a trace and its spans. The members a route decoded are checked as values and replaced by the
 * text they are stored as, so that the schema then sees every member as a client would send it. `wellFormedText`:
 * the request was decoded so that its strings hold no lone surrogate (see {@link TraceDraft.wellFormedText}).
 */
export function checkTraceRules(trace: JsonObject, nowMicros: number, { wellFormedText = false }: Pick<TraceDraft, 'wellFormedText'> = {}): RuleResult {
  const issues: ValidationIssue[] = [];
  const timestamp = trace.timestamp;
  const traceMicros = checkTimestamp(timestamp, '/timestamp', nowMicros, issues);
  if (timestamp instanceof DecodedTime) trace.timestamp = timeText(timestamp, traceMicros);
  const attributes = checkJsonText(trace.attributes, 'attributes', '/attributes', issues);
  if (attributes !== undefined) trace.attributes = attributes;
  if (!wellFormedText) checkWellFormed(trace, TRACE_TEXT, '', issues);
  const spanMicros: (number | undefined)[] = [];
  const spans = Array.isArray(trace.spans) ? trace.spans : [];
  if (spans.length > MAX_SPANS_PER_TRACE) {
    issues.push({ path: '/spans', code: 'too_many_spans', message: `must hold at most ${MAX_SPANS_PER_TRACE} spans; split the trace` });
    return { issues, traceMicros, spanMicros: [] };
  }
  const seenSpanIds = new Map<string, number>();
  for (let i = 0; i < spans.length; i++) {
    const span: unknown = spans[i];
    const base = `/spans/${i}`;
    if (!isJsonObject(span)) {
      spanMicros.push(undefined);
      continue;
    }
    const timestamp = span.timestamp;
    const micros = checkTimestamp(timestamp, `${base}/timestamp`, nowMicros, issues);
    if (timestamp instanceof DecodedTime) span.timestamp = timeText(timestamp, micros);
    spanMicros.push(micros);
    // A decoded member is put in its place as the text it is stored as, for the schema and normalization.
    const input = checkJsonText(span.input, 'input', `${base}/input`, issues);
    if (input !== undefined) span.input = input;
    const output = checkJsonText(span.output, 'output', `${base}/output`, issues);
    if (output !== undefined) span.output = output;
    const spanAttributes = checkJsonText(span.attributes, 'attributes', `${base}/attributes`, issues);
    if (spanAttributes !== undefined) span.attributes = spanAttributes;
    if (!wellFormedText) checkWellFormed(span, SPAN_TEXT, base, issues);
    if (typeof span.span_id === 'string') {
      const id = span.span_id.toLowerCase();
      const first = seenSpanIds.get(id);
      if (first !== undefined) {
        issues.push({ path: `${base}/span_id`, code: 'duplicate_span_id', message: `repeats the span_id of /spans/${first}` });
      } else {
        seenSpanIds.set(id, i);
      }
      if (typeof span.parent_span_id === 'string' && span.parent_span_id.toLowerCase() === id) {
        issues.push({ path: `${base}/parent_span_id`, code: 'invalid_parent', message: 'must not equal the span\'s own span_id' });
      }
    }
  }
  return { issues, traceMicros, spanMicros };
}
