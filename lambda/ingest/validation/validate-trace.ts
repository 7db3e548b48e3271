import type { ErrorObject } from 'ajv';
import validateDetailed from '../generated/validate-trace-detailed.js';
import validateFast from '../generated/validate-trace-fast.js';
import type { AcceptedSpan, AcceptedTrace, SpanKind, Status } from '../../shared/domain/trace.js';
import { MAX_ISSUES_PER_TRACE, type IssueCode, type ValidationIssue } from './issue-codes.js';
import { checkTraceRules } from './trace-rules.js';
import { normalizeTimestamp } from './timestamps.js';

export type TraceValidation = { ok: true; trace: AcceptedTrace } | { ok: false; issues: ValidationIssue[] };

type Json = Record<string, unknown>;

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
    node = (node as Json)[part.replaceAll('~1', '/').replaceAll('~0', '~')];
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
  return issues.slice(0, MAX_ISSUES_PER_TRACE);
}

const str = (value: unknown, fallback = ''): string => (typeof value === 'string' ? value : fallback);
const num = (value: unknown): number => (typeof value === 'number' ? value : 0);
const id = (value: unknown, newId: () => string): string => (typeof value === 'string' ? value.toLowerCase() : newId());
const attributes = (value: unknown): string => (typeof value === 'string' && value !== '' ? value : '{}');

function normalizeSpan(span: Json, micros: number, newId: () => string): AcceptedSpan {
  return {
    span_id: id(span.span_id, newId),
    parent_span_id: typeof span.parent_span_id === 'string' ? span.parent_span_id.toLowerCase() : null,
    timestamp: normalizeTimestamp(span.timestamp as string, micros),
    duration_ms: num(span.duration_ms),
    name: str(span.name),
    kind: (typeof span.kind === 'string' ? span.kind : 'llm') as SpanKind,
    status: (typeof span.status === 'string' ? span.status : 'ok') as Status,
    model: str(span.model),
    input_tokens: num(span.input_tokens),
    output_tokens: num(span.output_tokens),
    total_tokens: num(span.total_tokens),
    input: str(span.input),
    output: str(span.output),
    attributes: attributes(span.attributes),
    error_message: typeof span.error_message === 'string' ? span.error_message : null,
    session_id: str(span.session_id),
    agent_id: str(span.agent_id),
    agent_name: str(span.agent_name),
    user_id: str(span.user_id),
  };
}

/**
 * Validates one trace of a batch and, when it is valid, returns it normalized: defaults applied,
 * ids lower-cased or generated, timestamps in UTC to the microsecond. Only known members are
 * copied, so unknown members (including `__proto__`) never travel further.
 */
export function validateTrace(input: unknown, nowMicros: number, newId: () => string): TraceValidation {
  const schemaValid = validateFast(input);
  if (!schemaValid && (typeof input !== 'object' || input === null || Array.isArray(input))) {
    return { ok: false, issues: [{ path: '', code: 'not_an_object', message: 'must be a JSON object' }] };
  }
  const trace = input as Json;
  const rules = checkTraceRules(trace, nowMicros);
  if (!schemaValid || rules.issues.length > 0) {
    const schemaErrors = schemaValid ? [] : (validateDetailed(input), validateDetailed.errors ?? []);
    return { ok: false, issues: collectIssues(schemaErrors, trace, rules.issues) };
  }
  const spans = (Array.isArray(trace.spans) ? trace.spans : []) as Json[];
  return {
    ok: true,
    trace: {
      trace_id: id(trace.trace_id, newId),
      timestamp: normalizeTimestamp(trace.timestamp as string, rules.traceMicros as number),
      environment: str(trace.environment, 'default'),
      workspace_slug: str(trace.workspace_slug),
      duration_ms: num(trace.duration_ms),
      root_span_name: str(trace.root_span_name),
      status: (typeof trace.status === 'string' ? trace.status : 'ok') as Status,
      model: str(trace.model),
      input_tokens: num(trace.input_tokens),
      output_tokens: num(trace.output_tokens),
      total_tokens: num(trace.total_tokens),
      attributes: attributes(trace.attributes),
      session_id: str(trace.session_id),
      agent_id: str(trace.agent_id),
      agent_name: str(trace.agent_name),
      user_id: str(trace.user_id),
      spans: spans.map((span, i) => normalizeSpan(span, rules.spanMicros[i] as number, newId)),
    },
  };
}
