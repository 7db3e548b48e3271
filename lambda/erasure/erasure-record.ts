import { createHmac, randomUUID } from 'node:crypto';
import { describeValue } from '../shared/domain/describe-value.js';
import { storedTraceId } from '../shared/domain/trace-ids.js';
import type { MatchFields } from '../lake/ports.js';

/**
 * Erasure requests live in the data bucket, beside the data they erase, because all three of their readers are
 * there: the exactly-once views (Athena's table `erasure_requests`, DuckDB's `npm run query`) exclude matching
 * rows from the moment a request object exists, the planner lists the pending ones, and each worker that rewrites
 * an hour records its outcome next to them.
 */

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
  /** Rows of the traces this request matched in the hour (a trace two requests matched counts for both). */
  rows_removed: number;
  /** Bytes the hour's rewrite wrote, shared by every request that rewrite applied. */
  bytes_rewritten: number;
  /** Bytes of the hour (compacted objects before the rewrite, plus raw objects read): the ratio's denominator. */
  bytes_of_hour: number;
  objects_deleted: number;
  done_at: string;
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
    const id = typeof parsed.erasure_id === 'string' ? parsed.erasure_id : `with erasure_id ${describeValue(parsed.erasure_id)}`;
    throw new InvalidErasureError(`erasure request ${id} has another shape`);
  }
  return parsed as ErasureRequest;
}

export const serializeRecord = (record: ErasureRequest | ErasureHourOutcome): Uint8Array => Buffer.from(`${JSON.stringify(record)}\n`);

export function parseOutcome(bytes: Uint8Array): ErasureHourOutcome {
  const parsed = JSON.parse(Buffer.from(bytes).toString('utf8')) as ErasureHourOutcome;
  if (typeof parsed.hour !== 'string' || typeof parsed.rows_removed !== 'number' || typeof parsed.bytes_rewritten !== 'number') throw new InvalidErasureError('erasure outcome has another shape');
  return parsed;
}

/**
 * A trace id of a request in the form the lake stores it, so that it can match: matching is exact, and an upper-case
 * UUID or an OpenTelemetry trace id taken as given would leave the request done with 0 rows and the trace in place.
 */
function requestTraceId(value: string): string {
  const stored = storedTraceId(value);
  if (stored === undefined) {
    throw new InvalidErasureError(`'${value.slice(0, 80)}' is not a trace id: give a UUID (0639ad5e-ce3c-4e4d-9a34-1efb185b9d8b) or the 32 hex digits of an OpenTelemetry trace id (0639ad5ece3c4e4d9a341efb185b9d8b), in either case`);
  }
  return stored;
}

/**
 * A new request: pending, its selector deduplicated and sorted; its trace ids in their stored form (refused,
 * {@link InvalidErasureError}, when they have none), its user and session ids as given: those match exactly, case
 * and Unicode form included, as the rows hold them.
 */
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
    trace_ids: unique(selector.trace_ids.map(requestTraceId)),
    selector_hmacs: [],
  };
}

/** No request matches the row: one shared empty answer, since most rows match none. */
const NO_REQUESTS: readonly string[] = Object.freeze([]);

/** A request naming an id, and the last `received_at` it erases. */
interface Naming {
  erasureId: string;
  until: bigint;
}

/**
 * The requests one row (a trace row or a span row) matches, by id: those naming a member of its selector, received
 * no later than the request. A trace received after the request is new data and is kept. A done request matches
 * through its keyed hashes, so a matching trace that is replayed or lands late is still dropped. The cost per row
 * is three map lookups however many requests there are (plus the requests naming the row's ids, for the rows
 * that match), and each distinct id is hashed once per matcher (one matcher per slice compaction).
 */
export function rowMatcher(requests: readonly ErasureRequest[], secret: Uint8Array | undefined): (row: MatchFields) => readonly string[] {
  const name = (map: Map<string, Naming[]>, key: string, request: ErasureRequest) => {
    const naming = map.get(key) ?? [];
    naming.push({ erasureId: request.erasure_id, until: BigInt(request.requested_at_micros) });
    map.set(key, naming);
  };
  const plain = { user: new Map<string, Naming[]>(), session: new Map<string, Naming[]>(), trace: new Map<string, Naming[]>() };
  const hashed = new Map<string, Naming[]>();
  for (const request of requests) {
    if (request.status !== 'done') {
      for (const value of request.user_ids) name(plain.user, value, request);
      for (const value of request.session_ids) name(plain.session, value, request);
      for (const value of request.trace_ids) name(plain.trace, value, request);
    } else if (secret) {
      for (const hmac of request.selector_hmacs) name(hashed, hmac, request);
    }
  }
  if (plain.user.size + plain.session.size + plain.trace.size + hashed.size === 0) return () => NO_REQUESTS;
  const memo = new Map<string, string>();
  const hmacOf = (kind: SelectorKind, value: string) => {
    const key = `${kind}\n${value}`;
    let hmac = memo.get(key);
    if (hmac === undefined) memo.set(key, (hmac = selectorHmac(secret!, kind, value)));
    return hmac;
  };
  const naming = (kind: SelectorKind, value: string): Naming[] | undefined => {
    if (value === '') return undefined;
    const named = plain[kind].get(value);
    const hashedNamed = hashed.size === 0 ? undefined : hashed.get(hmacOf(kind, value));
    return named && hashedNamed ? [...named, ...hashedNamed] : (named ?? hashedNamed);
  };
  return (row) => {
    let ids = withErasing(undefined, naming('trace', row.trace_id), row.received_at);
    ids = withErasing(ids, naming('user', row.user_id), row.received_at);
    return withErasing(ids, naming('session', row.session_id), row.received_at) ?? NO_REQUESTS;
  };
}

/** `ids` with the requests of `named` that erase a row received at `receivedAt`, each once; allocated only on a first match. */
function withErasing(ids: string[] | undefined, named: readonly Naming[] | undefined, receivedAt: bigint): string[] | undefined {
  for (const { erasureId, until } of named ?? []) if (receivedAt <= until && !ids?.includes(erasureId)) (ids ??= []).push(erasureId);
  return ids;
}
