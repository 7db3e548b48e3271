import { isJsonObject, type JsonObject } from '../../../shared/domain/json.js';
import { exceedsDepthLimit, MAX_JSON_TEXT_DEPTH } from '../../../shared/domain/json-limits.js';
import type { CandidateTrace } from '../candidate.js';
import { MAX_SPANS_PER_TRACE, type ValidationIssue } from './issue-codes.js';
import { notJsonTextMessage } from './json-text-hints.js';
import { parseTimestampMicros, withinDayOfClock } from './timestamps.js';

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

/** `written` holds the micros a route formatted the text from: the range is checked, the text is not parsed again. */
function checkTimestamp(value: unknown, path: string, nowMicros: number, issues: ValidationIssue[], written?: number): number | undefined {
  if (typeof value !== 'string') return undefined;
  const micros = written ?? parseTimestampMicros(value);
  if (micros === undefined) {
    issues.push({ path, code: 'invalid_timestamp', message: 'must be an ISO 8601 date-time such as 2026-01-31T12:00:00.123Z' });
    return undefined;
  }
  if (!withinDayOfClock(micros, nowMicros)) {
    issues.push({ path, code: 'timestamp_out_of_range', message: 'must be within 24 hours of the server clock' });
  }
  return micros;
}

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
  issues.push({ path, code: 'too_deep', message: TOO_DEEP_MESSAGE });
  return true;
}

/** `written`: the route wrote or parsed the text itself (see `RouteWritten.jsonTexts`), so only its depth is checked. */
function checkJsonText(value: unknown, path: string, issues: ValidationIssue[], written: boolean): void {
  if (typeof value !== 'string' || value === '' || tooDeep(value, path, issues) || written) return;
  if (parseJson(value) === NOT_JSON) issues.push({ path, code: 'not_json_string', message: notJsonTextMessage(path.slice(path.lastIndexOf('/') + 1), value) });
}

function checkAttributes(value: unknown, path: string, issues: ValidationIssue[], written: boolean): void {
  if (typeof value !== 'string' || value === '' || tooDeep(value, path, issues) || written) return;
  const parsed = parseJson(value);
  if (parsed === NOT_JSON) {
    issues.push({ path, code: 'not_json_string', message: notJsonTextMessage('attributes', value) });
  } else if (!isJsonObject(parsed)) {
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

/** `written` and `wellFormedText`: what the route that decoded the trace knows of it, and so is not checked again. */
export function checkTraceRules(trace: JsonObject, nowMicros: number, { written, wellFormedText = false }: Pick<CandidateTrace, 'written' | 'wellFormedText'> = {}): RuleResult {
  const issues: ValidationIssue[] = [];
  const ownText = written?.jsonTexts === true;
  const traceMicros = checkTimestamp(trace.timestamp, '/timestamp', nowMicros, issues, written?.traceMicros);
  checkAttributes(trace.attributes, '/attributes', issues, ownText);
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
    spanMicros.push(checkTimestamp(span.timestamp, `${base}/timestamp`, nowMicros, issues, written?.spanMicros[i]));
    checkJsonText(span.input, `${base}/input`, issues, ownText);
    checkJsonText(span.output, `${base}/output`, issues, ownText);
    checkAttributes(span.attributes, `${base}/attributes`, issues, ownText);
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
