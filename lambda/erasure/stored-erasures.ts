import { createHash } from 'node:crypto';
import { type DatasetName, DATASETS } from '../datasets/registry.js';
import { DATA_PREFIXES } from '../shared/service-constants.js';
import { MANIFEST_ROOT, type Slice, manifestKey, sliceOfManifestKey } from '../lake/keys/compacted-keys.js';
import { sliceOfRawKey } from '../lake/keys/raw-keys.js';
import { parseManifest } from '../lake/manifest.js';
import type { LakeStore, ErasedHour, SliceErasure, SliceErasures } from '../lake/ports.js';
import type { SeenIds } from '../lake/lifecycle/seen-ids.js';
import { ALL_REQUESTS_PREFIX, hourOf, hourOfIndexKey, indexKey, orgIndexPrefix, outcomeKey, outcomePrefix, requestKey, requestOfKey, requestPrefix } from '../lake/keys/erasure-keys.js';
import { orgPrefix } from '../lake/keys/hour-prefixes.js';
import { type ErasureHourOutcome, type ErasureRequest, type ErasureSelector, doneRequest, parseOutcome, parseRequest, rowMatcher, selectorHmac, serializeRecord } from './erasure-record.js';

/** The per-stack secret that keys the hashes of selectors (done requests, the hour index). */
export interface ErasureSecret {
  get(): Promise<Uint8Array>;
}

const INDEX_HEX = 16;

/** The erasure requests in the data bucket: what compaction, the planner, the admin CLI and the views read. */
export class StoredErasures implements SliceErasures {
  constructor(
    private readonly store: LakeStore,
    private readonly secret: ErasureSecret,
  ) {}

  async requests(orgId: string): Promise<ErasureRequest[]> {
    const objects = await this.store.list(requestPrefix(orgId));
    const requests: ErasureRequest[] = [];
    for (const object of objects) {
      const bytes = await this.store.get(object.key);
      if (bytes) requests.push(parseRequest(bytes));
    }
    return requests.sort((a, b) => (a.requested_at < b.requested_at ? -1 : a.requested_at > b.requested_at ? 1 : 0));
  }

  async request(orgId: string, erasureId: string): Promise<ErasureRequest | undefined> {
    const bytes = await this.store.get(requestKey(orgId, erasureId));
    return bytes ? parseRequest(bytes) : undefined;
  }

  /** A request by id alone: one LIST of every organization's requests (they are few; the id says no organization). */
  async requestById(erasureId: string): Promise<ErasureRequest | undefined> {
    const found = (await this.store.list(ALL_REQUESTS_PREFIX)).map((object) => requestOfKey(object.key)).find((id) => id?.erasureId === erasureId);
    return found ? this.request(found.orgId, found.erasureId) : undefined;
  }

  async put(request: ErasureRequest): Promise<void> {
    await this.store.put(requestKey(request.org_id, request.erasure_id), serializeRecord(request), 'application/json');
  }

  async outcomes(request: Pick<ErasureRequest, 'org_id' | 'erasure_id'>): Promise<ErasureHourOutcome[]> {
    const outcomes: ErasureHourOutcome[] = [];
    for (const object of await this.store.list(outcomePrefix(request.org_id, request.erasure_id))) {
      const bytes = await this.store.get(object.key);
      if (bytes) outcomes.push(parseOutcome(bytes));
    }
    return outcomes;
  }

  async forSlice(slice: Slice): Promise<SliceErasure | undefined> {
    const requests = await this.requests(slice.orgId);
    if (requests.length === 0) return undefined;
    const applying: string[] = [];
    for (const request of requests) {
      if (request.status !== 'done' && !(await this.store.get(outcomeKey(request.org_id, request.erasure_id, hourOf(slice))))) applying.push(request.erasure_id);
    }
    const hashed = requests.some((request) => request.status === 'done');
    return { applying, matching: rowMatcher(requests, hashed ? await this.secret.get() : undefined) };
  }

  async recordHour(slice: Slice, removed: ReadonlyMap<string, ErasedHour>): Promise<void> {
    const doneAt = new Date().toISOString();
    for (const [erasureId, outcome] of removed) {
      const record: ErasureHourOutcome = {
        erasure_id: erasureId,
        hour: hourOf(slice),
        rows_removed: outcome.rowsRemoved,
        bytes_rewritten: outcome.bytesRewritten,
        bytes_of_hour: outcome.bytesOfHour,
        objects_deleted: outcome.objectsDeleted,
        done_at: doneAt,
      };
      await this.store.put(outcomeKey(slice.orgId, erasureId, record.hour), serializeRecord(record), 'application/json');
    }
  }

  /** Writes the hour index of one dataset of a slice (see {@link indexKey}). */
  async indexHour(slice: Slice, dataset: DatasetName, seen: SeenIds): Promise<void> {
    const secret = await this.secret.get();
    const keys = new Set<string>();
    const add = (kind: 'user' | 'session' | 'trace', values: Set<string>) => {
      for (const value of values) if (value !== '') keys.add(selectorHmac(secret, kind, value).slice(0, INDEX_HEX));
    };
    add('user', seen.users);
    add('session', seen.sessions);
    add('trace', seen.traces);
    await this.store.put(indexKey(slice, dataset), Buffer.from(`${JSON.stringify({ keys: [...keys].sort() })}\n`), 'application/json');
  }

  /**
   * The hours of an organization that may hold a request's rows: hours whose index names a member of its selector,
   * compacted hours without an index (compacted before the index existed), and hours with raw objects their
   * manifest does not cover (not compacted yet, or landed since). Reads: one LIST of the index and manifests, a GET
   * per indexed hour (8 bytes per id, hex), a LIST of the raw prefixes and a GET of the manifest per hour with raw
   * objects (bounded by the raw objects' 3-day lifetime). No Parquet is read.
   */
  async findHours(request: ErasureRequest): Promise<string[]> {
    const secret = await this.secret.get();
    const wanted = new Set([
      ...request.user_ids.map((value) => selectorHmac(secret, 'user', value).slice(0, INDEX_HEX)),
      ...request.session_ids.map((value) => selectorHmac(secret, 'session', value).slice(0, INDEX_HEX)),
      ...request.trace_ids.map((value) => selectorHmac(secret, 'trace', value).slice(0, INDEX_HEX)),
    ]);
    const hours = new Set<string>();
    const indexes = new Map<string, number>();
    for (const object of await this.store.list(orgIndexPrefix(request.org_id))) {
      const hour = hourOfIndexKey(object.key);
      if (hour === undefined) continue;
      indexes.set(hour, (indexes.get(hour) ?? 0) + 1);
      const bytes = await this.store.get(object.key);
      const keys = bytes ? ((JSON.parse(Buffer.from(bytes).toString('utf8')) as { keys?: unknown }).keys as string[] | undefined) : undefined;
      if (!Array.isArray(keys) || keys.some((key) => wanted.has(key))) hours.add(hour);
    }
    // An hour is indexed only when every dataset's index is there: a switch drops them all, and one written alone (the
    // other's write killed) is not the whole hour.
    const indexed = new Set([...indexes].filter(([, count]) => count === DATASETS.length).map(([hour]) => hour));
    for (const object of await this.store.list(orgPrefix(MANIFEST_ROOT, request.org_id))) {
      const slice = sliceOfManifestKey(object.key);
      if (slice && !indexed.has(hourOf(slice))) hours.add(hourOf(slice));
    }
    // Raw objects: an hour not indexed yet, or with raw objects its manifest does not cover (landed since).
    const raw = new Map<string, { slice: Slice; objects: { key: string; etag: string }[] }>();
    for (const dataset of ['traces', 'spans'] as const) {
      for (const object of await this.store.list(orgPrefix(DATA_PREFIXES[dataset], request.org_id))) {
        const slice = sliceOfRawKey(object.key);
        if (!slice) continue;
        const entry = raw.get(hourOf(slice)) ?? { slice, objects: [] };
        entry.objects.push(object);
        raw.set(hourOf(slice), entry);
      }
    }
    for (const [hour, { slice, objects }] of raw) {
      if (hours.has(hour)) continue;
      if (!indexed.has(hour)) {
        hours.add(hour);
        continue;
      }
      const bytes = await this.store.get(manifestKey(slice));
      const manifest = bytes ? parseManifest(bytes, slice) : undefined;
      const covered = new Set([...(manifest?.traces.covered ?? []), ...(manifest?.spans.covered ?? [])].map((entry) => `${entry.key} ${entry.etag}`));
      if (objects.some((object) => !covered.has(`${object.key} ${object.etag}`))) hours.add(hour);
    }
    return [...hours].sort();
  }
}

/** What `admin erase status` prints. */
export interface ErasureStatusView {
  erasure_id: string;
  org_id: string;
  status: ErasureRequest['status'];
  requested_at: string;
  done_at: string | null;
  /** The selector while the request runs; `null` once done (only its keyed hashes are kept). */
  selector: ErasureSelector | null;
  selector_kept_as: 'plain' | 'hmac-sha256';
  hours_found: number | null;
  hours_done: number;
  rows_removed: number;
  bytes_rewritten: number;
  bytes_of_hours: number;
}

/**
 * A request's status from its record and its hours' outcomes. `hours_found` counts the hours found holding its rows
 * and the hours rewritten for it before it was searched (another request's rewrite applies every open request, and
 * leaves the search nothing to find there): every hour done is an hour found. `null` while neither is known.
 */
export async function erasureStatus(erasures: StoredErasures, request: ErasureRequest): Promise<ErasureStatusView> {
  const outcomes = await erasures.outcomes(request);
  const hoursKnown = request.hours || outcomes.length > 0 ? new Set([...(request.hours ?? []), ...outcomes.map((outcome) => outcome.hour)]) : undefined;
  const sum = (field: 'rows_removed' | 'bytes_rewritten' | 'bytes_of_hour') => outcomes.reduce((total, outcome) => total + outcome[field], 0);
  const done = request.status === 'done';
  return {
    erasure_id: request.erasure_id,
    org_id: request.org_id,
    status: request.status,
    requested_at: request.requested_at,
    done_at: request.done_at ?? null,
    selector: done ? null : { user_ids: request.user_ids, session_ids: request.session_ids, trace_ids: request.trace_ids },
    selector_kept_as: done ? 'hmac-sha256' : 'plain',
    hours_found: hoursKnown ? hoursKnown.size : null,
    hours_done: outcomes.length,
    rows_removed: sum('rows_removed'),
    bytes_rewritten: sum('bytes_rewritten'),
    bytes_of_hours: sum('bytes_of_hour'),
  };
}

/** The request id of every request in the bucket that is not done, by organization (one LIST of the requests). */
export async function openRequests(store: LakeStore, erasures: StoredErasures): Promise<ErasureRequest[]> {
  const open: ErasureRequest[] = [];
  for (const object of await store.list(ALL_REQUESTS_PREFIX)) {
    const id = requestOfKey(object.key);
    if (!id) continue;
    const request = await erasures.request(id.orgId, id.erasureId);
    if (request && request.status !== 'done') open.push(request);
  }
  return open;
}

/** What one look at the open requests leaves to do: the hours to rewrite, and the requests finished. */
export interface ErasurePlan {
  /** Hours to rewrite now, each once however many requests need it. */
  slices: Slice[];
  /** Per slice, a fingerprint of the requests that need it (the queue's deduplication id). */
  fingerprints: Map<string, string>;
  found: string[];
  finished: string[];
}

/**
 * The scheduled step of erasure, run by the planner (deployed) or `npm run compact` (locally) before compaction:
 * a pending request gets its hours found and becomes running; a running request's hours without an outcome are
 * to be rewritten (through the same compaction of a slice as everything else); a running request with every hour
 * done becomes done, its selector replaced by keyed hashes. A crash anywhere leaves a state this step picks up.
 */
export async function planErasures(store: LakeStore, erasures: StoredErasures, secret: ErasureSecret, now: () => Date = () => new Date()): Promise<ErasurePlan> {
  const plan: ErasurePlan = { slices: [], fingerprints: new Map(), found: [], finished: [] };
  const needs = new Map<string, { slice: Slice; ids: string[] }>();
  for (let request of await openRequests(store, erasures)) {
    if (request.status === 'pending' || !request.hours) {
      request = { ...request, status: 'running', hours: await erasures.findHours(request) };
      await erasures.put(request);
      plan.found.push(request.erasure_id);
    }
    const done = new Set((await erasures.outcomes(request)).map((outcome) => outcome.hour));
    const left = request.hours!.filter((hour) => !done.has(hour));
    if (left.length === 0) {
      await erasures.put(doneRequest(request, await secret.get(), now()));
      plan.finished.push(request.erasure_id);
      continue;
    }
    for (const hour of left) {
      const [dt, h] = hour.split('/') as [string, string];
      const id = `${request.org_id}/${hour}`;
      const entry = needs.get(id) ?? { slice: { orgId: request.org_id, dt, hour: h }, ids: [] };
      entry.ids.push(request.erasure_id);
      needs.set(id, entry);
    }
  }
  for (const [id, { slice, ids }] of [...needs.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
    plan.slices.push(slice);
    plan.fingerprints.set(id, createHash('sha256').update(`erasure\n${id}\n${ids.sort().join('\n')}`).digest('hex'));
  }
  return plan;
}
