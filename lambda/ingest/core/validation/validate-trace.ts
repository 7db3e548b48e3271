import type { ErrorObject } from 'ajv';
import validateDetailed from '../../generated/validate-trace-detailed.js';
import validateFast from '../../generated/validate-trace-fast.js';
import type { AcceptedTrace } from '../../../shared/domain/trace.js';
import { normalizeTrace } from '../../generated/normalize-trace.js';
import { MAX_ISSUES_PER_TRACE, type IssueCode, type ValidationIssue } from './issue-codes.js';
import { checkTraceRules } from './trace-rules.js';

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
  return { ok: true, trace: normalizeTrace(trace, rules.traceMicros as number, rules.spanMicros, newId) };
}
