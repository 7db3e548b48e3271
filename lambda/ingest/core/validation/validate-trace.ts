import type { ErrorObject } from 'ajv';
import validateDetailed from '../../generated/validate-trace-detailed.js';
import validateFast from '../../generated/validate-trace-fast.js';
import { isJsonObject, type JsonObject } from '../../../shared/domain/json.js';
import type { AcceptedTrace } from '../../../shared/domain/trace.js';
import type { TraceDraft } from '../draft.js';
import { normalizeTrace } from '../../generated/normalize-trace.js';
import { MAX_ISSUES_PER_TRACE, type IssueCode, type ValidationIssue } from './issue-codes.js';
import { JSON_TEXT_MEMBERS, notAStringMessage } from './json-text-hints.js';
import { checkTraceRules } from './trace-rules.js';


const UUID_FIELDS = new Set(['trace_id', 'span_id', 'parent_span_id']);
const REQUIRED_FIELDS = new Set(['timestamp', 'name']);

const lastSegment = (path: string): string => path.slice(path.lastIndexOf('/') + 1);

function typeMessage(expected: unknown): string {
  const types = (Array.isArray(expected) ? expected : [expected]).filter((t) => t !== 'null');
  const names = types.map((t) => (t === 'integer' ? 'an integer' : t === 'object' || t === 'array' ? `an ${t}` : `a ${t}`));
  return `must be ${names.join(' or ')}${types.includes('number') || types.includes('integer') ? ' (finite, not a string)' : ''}`;
}

function valueAt(root: unknown, pointer: string): unknown {
  let node = root;
  for (const part of pointer.split('/').slice(1)) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as JsonObject)[part.replaceAll('~1', '/').replaceAll('~0', '~')];
  }
  return node;
}

function toIssue(error: ErrorObject, trace: unknown): ValidationIssue | undefined {
  const path = error.instancePath;
  const field = lastSegment(path);
  const issue = (code: IssueCode, message: string): ValidationIssue => ({ path, code, message });
  switch (error.keyword) {
    case 'required': {
      const missing = String((error.params as { missingProperty: string }).missingProperty);
      return { path: `${path}/${missing}`, code: 'required', message: 'is required' };
    }
    case 'type':
      if (path === '' || /^\/spans\/\d+$/.test(path)) return issue('not_an_object', 'must be a JSON object');
      if (REQUIRED_FIELDS.has(field) && valueAt(trace, path) === null) return issue('required', 'is required and must not be null');
      if (JSON_TEXT_MEMBERS.has(field)) return issue('invalid_type', notAStringMessage(field, valueAt(trace, path)));
      return issue('invalid_type', typeMessage((error.params as { type: unknown }).type));
    case 'enum': {
      const allowed = (error.params as { allowedValues: unknown[] }).allowedValues.filter((v) => v !== null);
      return issue('invalid_enum', `must be one of ${allowed.join(', ')}`);
    }
    case 'pattern':
      // Timestamps are reported by the rules, which also check the calendar.
      if (field === 'timestamp') return undefined;
      if (UUID_FIELDS.has(field)) return issue('invalid_uuid', 'must be a UUID such as 0b7e3c1a-4f2d-4c8e-9a61-3f5b2d9e7c10');
      return issue('invalid_type', error.message ?? 'has the wrong form');
    case 'maxLength':
      return issue('too_long', `must be at most ${String((error.params as { limit: number }).limit)} characters`);
    case 'minimum':
      return issue('out_of_range', 'must be ≥ 0');
    case 'maximum':
      return issue('out_of_range', 'must be ≤ 9007199254740991 (2^53−1)');
    default:
      return issue('invalid_type', error.message ?? 'is invalid');
  }
}

/** The schema's and the rules' issues, each path and code once, in that order; uncapped. */
function collectIssues(schemaErrors: readonly ErrorObject[], trace: unknown, ruleIssues: readonly ValidationIssue[]): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const seen = new Set<string>();
  const add = (issue: ValidationIssue | undefined) => {
    if (!issue) return;
    const key = `${issue.path}\u0000${issue.code}`;
    if (seen.has(key)) return;
    seen.add(key);
    issues.push(issue);
  };
  for (const error of schemaErrors) add(toIssue(error, trace));
  for (const issue of ruleIssues) add(issue);
  return issues;
}

/** The issues a rejected trace is answered with: at most MAX_ISSUES_PER_TRACE. */
const capped = (issues: ValidationIssue[]): ValidationIssue[] => issues.slice(0, MAX_ISSUES_PER_TRACE);

/** A span left out of a trace that lands without it (`drops-span`): its position as sent and its issues, paths inside the span. */
export interface DroppedSpan {
  spanIndex: number;
  issues: ValidationIssue[];
}

export type TraceValidation =
  | { ok: true; trace: AcceptedTrace; droppedSpans: DroppedSpan[] }
  | { ok: false; issues: ValidationIssue[] };

const SPAN_PATH = /^\/spans\/(\d+)(?=\/|$)/;

/**
 * Validates one draft once and, when it is valid, returns it normalized: defaults applied, ids
 * lower-cased or generated, timestamps in UTC to the microsecond. Only known members are copied, so
 * unknown members (including `__proto__`) never travel further. A `drops-span` draft whose only
 * issues are inside some of its spans lands without them, as long as one span is left.
 */
export function validateDraft(draft: TraceDraft, nowMicros: number, newId: () => string): TraceValidation {
  const input = draft.trace;
  if (!isJsonObject(input)) return { ok: false, issues: [{ path: '', code: 'not_an_object', message: 'must be a JSON object' }] };
  // The rules first: they check what a route decoded as values and write its text, which the schema then checks.
  const rules = checkTraceRules(input, nowMicros, draft);
  const schemaValid = validateFast(input);
  if (schemaValid && rules.issues.length === 0) {
    return { ok: true, trace: normalizeTrace(input, rules.traceMicros as number, rules.spanMicros, newId), droppedSpans: [] };
  }
  const schemaErrors = schemaValid ? [] : (validateDetailed(input), validateDetailed.errors ?? []);
  const issues = collectIssues(schemaErrors, input, rules.issues);
  if (draft.invalidSpan === 'rejects-trace') return { ok: false, issues: capped(issues) };
  return withoutInvalidSpans(input, issues, rules.traceMicros, rules.spanMicros, newId);
}

/** A `drops-span` trace whose issues all lie inside spans, normalized without those spans; otherwise rejected. */
function withoutInvalidSpans(
  trace: JsonObject,
  issues: ValidationIssue[],
  traceMicros: number | undefined,
  spanMicros: readonly (number | undefined)[],
  newId: () => string,
): TraceValidation {
  const bySpan = new Map<number, ValidationIssue[]>();
  for (const issue of issues) {
    const match = SPAN_PATH.exec(issue.path);
    if (!match) return { ok: false, issues: capped(issues) };
    const spanIndex = Number(match[1]);
    const own = bySpan.get(spanIndex) ?? bySpan.set(spanIndex, []).get(spanIndex)!;
    own.push({ ...issue, path: issue.path.slice(match[0].length) });
  }
  const spans = trace.spans as JsonObject[];
  const kept = spans.filter((_, i) => !bySpan.has(i));
  if (kept.length === 0) return { ok: false, issues: capped(issues) };
  const keptMicros = spanMicros.filter((_, i) => !bySpan.has(i));
  const droppedSpans = [...bySpan].map(([spanIndex, spanIssues]) => ({ spanIndex, issues: capped(spanIssues) }));
  return { ok: true, trace: normalizeTrace({ ...trace, spans: kept }, traceMicros as number, keptMicros, newId), droppedSpans };
}

/** {@link validateDraft} for a trace a client sent as JSON (`rejects-trace`). */
export function validateTrace(input: unknown, nowMicros: number, newId: () => string): TraceValidation {
  return validateDraft({ trace: input, spansOnly: false, invalidSpan: 'rejects-trace' }, nowMicros, newId);
}
