import { createHmac, randomUUID } from 'node:crypto';
import { DATA_PREFIXES } from '../../shared/service-constants.js';
import type { Slice } from '../compaction-keys.js';

/**
 * Erasure requests live in the data bucket, beside the data they erase, because all three of their readers are
 * there: the exactly-once views (Athena's table `erasure_requests`, DuckDB's `npm run query`) exclude matching
 * rows from the moment a request object exists, the planner lists the pending ones, and each worker that rewrites
 * an hour records its outcome next to them.
 */
export const ERASURE_ROOT = DATA_PREFIXES.erasures;

/** What an erasure removes: every trace that one of these names, in its trace row or in any of its spans. */
export interface ErasureSelector {
  user_ids: string[];
  session_ids: string[];
  trace_ids: string[];
}

export type ErasureStatus = 'pending' | 'running' | 'done';

/**
 * One request, one JSON line (Athena's JSON SerDe reads it as one row): `user_ids`, `session_ids` and `trace_ids`
 * hold the selector while the request runs; once done they are emptied and `selector_hmacs` keeps only keyed
 * hashes of them (see {@link selectorHmacs}), which still let compaction drop a matching trace replayed later.
 */
export interface ErasureRequest extends ErasureSelector {
  version: 1;
  erasure_id: string;
  org_id: string;
  status: ErasureStatus;
  requested_at: string;
  /** `requested_at` in µs, as the views compare it with `received_at`: traces received later are not erased. */
  requested_at_micros: number;
  /** Hours (`<dt>/<hour>`) found holding matching rows, once the planner looked; absent while pending. */
  hours?: string[];
  done_at?: string;
  selector_hmacs: string[];
}

/** What rewriting one hour for one erasure did, written once by the worker that switched the hour. */
export interface ErasureHourOutcome {
  erasure_id: string;
  hour: string;
  rows_removed: number;
  bytes_rewritten: number;
  /** Bytes of the hour (compacted objects before the rewrite, plus raw objects read): the ratio's denominator. */
  bytes_of_hour: number;
  objects_deleted: number;
  done_at: string;
}

export const requestPrefix = (orgId: string) => `${ERASURE_ROOT}requests/org_id=${orgId}/`;
export const requestKey = (orgId: string, erasureId: string) => `${requestPrefix(orgId)}${erasureId}.json`;
export const outcomePrefix = (orgId: string, erasureId: string) => `${ERASURE_ROOT}outcomes/org_id=${orgId}/${erasureId}/`;
export const hourOf = (slice: Pick<Slice, 'dt' | 'hour'>) => `${slice.dt}/${slice.hour}`;
export const outcomeKey = (orgId: string, erasureId: string, hour: string) => `${outcomePrefix(orgId, erasureId)}${hour.replace('/', 'T')}.json`;

/** The erasure id in a request key, or undefined. */
export function requestOfKey(key: string): { orgId: string; erasureId: string } | undefined {
  const match = /^erasures\/requests\/org_id=([^/]+)\/([^/]+)\.json$/.exec(key);
  return match ? { orgId: match[1]!, erasureId: match[2]! } : undefined;
}

export const newErasureId = () => `er_${randomUUID().replaceAll('-', '')}`;

export class InvalidErasureError extends Error {
  override name = 'InvalidErasureError';
}

/** One selector member as the keyed hash names it: its kind, so a user id and a session id with one value differ. */
type SelectorKind = 'user' | 'session' | 'trace';

/** HMAC-SHA-256 of a selector member under the stack's secret (hex): a plain hash of an email is reversed by a dictionary. */
export const selectorHmac = (secret: Uint8Array, kind: SelectorKind, value: string) => createHmac('sha256', secret).update(`${kind}\n${value}`).digest('hex');

export function selectorHmacs(secret: Uint8Array, selector: ErasureSelector): string[] {
  return [
    ...selector.user_ids.map((value) => selectorHmac(secret, 'user', value)),
    ...selector.session_ids.map((value) => selectorHmac(secret, 'session', value)),
    ...selector.trace_ids.map((value) => selectorHmac(secret, 'trace', value)),
  ].sort();
}

/** The request as stored once done: the selector replaced by its keyed hashes. */
export function doneRequest(request: ErasureRequest, secret: Uint8Array, now: Date): ErasureRequest {
  return { ...request, status: 'done', done_at: now.toISOString(), selector_hmacs: selectorHmacs(secret, request), user_ids: [], session_ids: [], trace_ids: [] };
}

const isStrings = (value: unknown): value is string[] => Array.isArray(value) && value.every((item) => typeof item === 'string');

export function parseRequest(bytes: Uint8Array): ErasureRequest {
  let parsed: Partial<ErasureRequest>;
  try {
    parsed = JSON.parse(Buffer.from(bytes).toString('utf8')) as Partial<ErasureRequest>;
  } catch (error) {
    throw new InvalidErasureError('erasure request is not JSON', { cause: error });
  }
  if (
    parsed.version !== 1 ||
    typeof parsed.erasure_id !== 'string' ||
    typeof parsed.org_id !== 'string' ||
    !['pending', 'running', 'done'].includes(parsed.status as string) ||
    typeof parsed.requested_at_micros !== 'number' ||
    !isStrings(parsed.user_ids) ||
    !isStrings(parsed.session_ids) ||
    !isStrings(parsed.trace_ids) ||
    !isStrings(parsed.selector_hmacs) ||
    (parsed.hours !== undefined && !isStrings(parsed.hours))
  ) {
    throw new InvalidErasureError(`erasure request ${String(parsed.erasure_id)} has another shape`);
  }
  return parsed as ErasureRequest;
}

export const serializeRecord = (record: ErasureRequest | ErasureHourOutcome): Uint8Array => Buffer.from(`${JSON.stringify(record)}\n`);

export function parseOutcome(bytes: Uint8Array): ErasureHourOutcome {
  const parsed = JSON.parse(Buffer.from(bytes).toString('utf8')) as ErasureHourOutcome;
  if (typeof parsed.hour !== 'string' || typeof parsed.rows_removed !== 'number' || typeof parsed.bytes_rewritten !== 'number') throw new InvalidErasureError('erasure outcome has another shape');
  return parsed;
}

/** A new request: pending, its selector as given (deduplicated, sorted). */
export function newRequest(orgId: string, selector: ErasureSelector, now: Date, erasureId = newErasureId()): ErasureRequest {
  const unique = (values: string[]) => [...new Set(values)].sort();
  return {
    version: 1,
    erasure_id: erasureId,
    org_id: orgId,
    status: 'pending',
    requested_at: now.toISOString(),
    requested_at_micros: now.getTime() * 1000,
    user_ids: unique(selector.user_ids),
    session_ids: unique(selector.session_ids),
    trace_ids: unique(selector.trace_ids),
    selector_hmacs: [],
  };
}

/** The fields of a row an erasure matches on. */
export interface MatchFields {
  trace_id: string;
  user_id: string;
  session_id: string;
  /** µs since the epoch. */
  received_at: bigint;
}

/**
 * Whether one row (a trace row or a span row) matches a request: a member of its selector, received no later than
 * the request. A trace received after the request is new data and is kept. A done request matches through its
 * keyed hashes, so a matching trace that is replayed or lands late is still dropped.
 */
export function rowMatcher(requests: readonly ErasureRequest[], secret: Uint8Array | undefined): (row: MatchFields) => boolean {
  const plain = requests.filter((request) => request.status !== 'done');
  const hashed = secret ? requests.filter((request) => request.status === 'done' && request.selector_hmacs.length > 0) : [];
  if (plain.length === 0 && hashed.length === 0) return () => false;
  const sets = plain.map((request) => ({ before: BigInt(request.requested_at_micros), users: new Set(request.user_ids), sessions: new Set(request.session_ids), traces: new Set(request.trace_ids) }));
  const hashSets = hashed.map((request) => ({ before: BigInt(request.requested_at_micros), hmacs: new Set(request.selector_hmacs) }));
  return (row) => {
    for (const set of sets) {
      if (row.received_at > set.before) continue;
      if (set.traces.has(row.trace_id) || (row.user_id !== '' && set.users.has(row.user_id)) || (row.session_id !== '' && set.sessions.has(row.session_id))) return true;
    }
    for (const set of hashSets) {
      if (row.received_at > set.before) continue;
      const key = secret!;
      if (
        set.hmacs.has(selectorHmac(key, 'trace', row.trace_id)) ||
        (row.user_id !== '' && set.hmacs.has(selectorHmac(key, 'user', row.user_id))) ||
        (row.session_id !== '' && set.hmacs.has(selectorHmac(key, 'session', row.session_id)))
      ) {
        return true;
      }
    }
    return false;
  };
}
