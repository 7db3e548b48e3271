/**
 * The erasure requests in the bucket, on placeholder objects: no Parquet is read by any of this. Finding a request's
 * hours (the index, the manifests, the raw objects), what compaction is told for a slice, the index written, the
 * status, and the planner's step. The erasure through compaction of whole hours is compact-and-erase.test.ts.
 */
import { createHash } from 'node:crypto';
import { doneRequest, newRequest, selectorHmac, type ErasureRequest } from '../../../lambda/erasure/erasure-record.js';
import { type ErasureSecret, StoredErasures, erasureStatus, openRequests, planErasures } from '../../../lambda/erasure/stored-erasures.js';
import { manifestKey } from '../../../lambda/lake/keys/compacted-keys.js';
import { indexKey, outcomeKey, requestKey } from '../../../lambda/lake/keys/erasure-keys.js';
import { landingObjectKey } from '../../../lambda/lake/keys/raw-keys.js';
import { nextManifest, serializeManifest } from '../../../lambda/lake/manifest.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';

const KEY = Buffer.alloc(32, 9);
const T9 = '00000000-0000-4000-8000-000000000009';
const REQUESTED = new Date('2026-11-23T00:00:00Z');
const NOW = new Date('2026-11-23T12:00:00Z');

/** The secret, counting reads: it is read only when a hash is needed. */
function countedSecret(): ErasureSecret & { reads: number } {
  const secret = { reads: 0, get: async () => (secret.reads++, KEY) };
  return secret;
}

const hourSlice = (hour: string, orgId = 'org-a') => ({ orgId, dt: '2026-11-22', hour });
const rawKey = (hour: string, n = 1, dataset: 'traces' | 'spans' = 'traces', orgId = 'org-a') => landingObjectKey(dataset, { ...hourSlice(hour, orgId), shardId: 's0', firstSequenceNumber: String(n) });
const ids = (fields: Partial<{ users: string[]; sessions: string[]; traces: string[] }> = {}) => ({ users: new Set(fields.users ?? []), sessions: new Set(fields.sessions ?? []), traces: new Set(fields.traces ?? []) });
const selector = (fields: Partial<{ user_ids: string[]; session_ids: string[]; trace_ids: string[] }>) => ({ user_ids: [], session_ids: [], trace_ids: [], ...fields });

class Lake {
  readonly bucket = new MemoryBucket();
  readonly secret = countedSecret();
  readonly erasures = new StoredErasures(this.bucket, this.secret);

  object(key: string, etag = key): this {
    this.bucket.objects.set(key, { body: new Uint8Array(1), etag });
    return this;
  }

  /** A compacted hour: its manifest, covering these raw objects (by key and ETag as listed). */
  manifest(hour: string, covered: string[] = [], orgId = 'org-a'): this {
    const entries = covered.map((key) => ({ key, etag: key }));
    const manifest = nextManifest(hourSlice(hour, orgId), 1, { traces: { files: [], rows: 0, covered: entries }, spans: { files: [], rows: 0, covered: [] } }, undefined, { kept: [], replaced: [] }, NOW);
    this.bucket.objects.set(manifestKey(hourSlice(hour, orgId)), { body: serializeManifest(manifest), etag: 'm' });
    return this;
  }

  /** The hour index of both datasets (or one), as compaction writes it. */
  async index(hour: string, seen: ReturnType<typeof ids>, datasets: ('traces' | 'spans')[] = ['traces', 'spans'], orgId = 'org-a'): Promise<this> {
    for (const dataset of datasets) await this.erasures.indexHour(hourSlice(hour, orgId), dataset, seen);
    return this;
  }
}

describe('findHours', () => {
  /**
   * 01 indexed naming alice, compacted, no raw objects left (found by the index alone); 02 indexed, naming no one
   * asked for; 03 never compacted (found by its raw objects alone); 04 indexed, its raw objects all covered; 05 and
   * 08 indexed, with a raw object landed since (another key; the same key with another ETag); 06 compacted before the
   * index existed; 07 indexed for one dataset only; 09 an index object whose keys are unreadable; 10 indexed naming
   * conv-1 as a session; 11 naming T9 as a trace; 12 naming conv-1 as a user. Another organization's (org-ab's, whose
   * prefix shares org-a's text) hours name alice, and are never found.
   */
  async function lake(): Promise<Lake> {
    const lake = new Lake();
    await lake.index('01', ids({ users: ['alice', 'bob'] }));
    lake.manifest('01');
    await lake.index('02', ids({ users: ['bob'], sessions: ['conv-2'] }));
    lake.manifest('02');
    lake.object(rawKey('03')).object(rawKey('03', 1, 'spans'));
    await lake.index('04', ids({ users: ['bob'] }));
    lake.manifest('04', [rawKey('04'), rawKey('04', 1, 'spans')]).object(rawKey('04')).object(rawKey('04', 1, 'spans'));
    await lake.index('05', ids({ users: ['bob'] }));
    lake.manifest('05', [rawKey('05')]).object(rawKey('05')).object(rawKey('05', 2, 'spans'));
    lake.manifest('06');
    await lake.index('07', ids({ users: ['bob'] }), ['spans']);
    lake.manifest('07');
    await lake.index('08', ids({ users: ['bob'] }));
    lake.manifest('08', [rawKey('08')]).object(rawKey('08'), 'changed since');
    lake.object(indexKey(hourSlice('09'), 'traces')).object(indexKey(hourSlice('09'), 'spans'));
    lake.bucket.objects.set(indexKey(hourSlice('09'), 'traces'), { body: Buffer.from('{"other":1}\n'), etag: 'x' });
    lake.bucket.objects.set(indexKey(hourSlice('09'), 'spans'), { body: Buffer.from('{"other":1}\n'), etag: 'x' });
    lake.manifest('09');
    await lake.index('10', ids({ sessions: ['conv-1'] }));
    lake.manifest('10');
    await lake.index('11', ids({ traces: [T9] }));
    lake.manifest('11');
    await lake.index('12', ids({ users: ['conv-1'] }));
    lake.manifest('12');
    for (const hour of ['01', '13']) {
      await lake.index(hour, ids({ users: ['alice'] }), ['traces', 'spans'], 'org-ab');
      lake.manifest(hour, [], 'org-ab').object(rawKey(hour, 1, 'traces', 'org-ab'));
    }
    return lake;
  }
  /** Hours every request of org-a finds, whatever it names: never compacted, compacted since, or without a whole index. */
  const ALWAYS = ['03', '05', '06', '07', '08', '09'];
  const found = (hours: string[]) => hours.map((hour) => `2026-11-22/${hour}`).sort();

  it.each([
    ['a user id', selector({ user_ids: ['alice'] }), ['01']],
    ['a session id', selector({ session_ids: ['conv-1'] }), ['10']],
    ['a trace id', selector({ trace_ids: [T9] }), ['11']],
    ['each kind at once', selector({ user_ids: ['alice'], session_ids: ['conv-1'], trace_ids: [T9] }), ['01', '10', '11']],
    ['no one indexed', selector({ user_ids: ['nobody'] }), []],
  ])('finds the indexed hours naming %s, and every hour not indexed or with raw objects since', async (_, named, indexed) => {
    const { erasures } = await lake();
    expect(await erasures.findHours(newRequest('org-a', named, REQUESTED))).toEqual(found([...ALWAYS, ...indexed]));
  });

  it('finds through the index alone an hour whose raw objects are gone, and through the raw objects alone an hour never compacted', async () => {
    const lake = new Lake();
    await lake.index('01', ids({ users: ['alice'] }));
    lake.manifest('01');
    lake.object(rawKey('03'));
    await lake.index('04', ids({ users: ['bob'] }));
    lake.manifest('04', [rawKey('04')]).object(rawKey('04'));
    expect(await lake.erasures.findHours(newRequest('org-a', selector({ user_ids: ['alice'] }), REQUESTED))).toEqual(found(['01', '03']));
  });

  it('reads a manifest only for an indexed hour not found yet that has raw objects: one GET per index object, and one per such hour', async () => {
    const lake = new Lake();
    // 01: indexed, naming alice, with raw objects landed since; 03: never compacted; 04: indexed, raw objects covered.
    await lake.index('01', ids({ users: ['alice'] }));
    lake.manifest('01').object(rawKey('01'));
    lake.object(rawKey('03'));
    await lake.index('04', ids({ users: ['bob'] }));
    lake.manifest('04', [rawKey('04')]).object(rawKey('04'));
    const read: string[] = [];
    const get = lake.bucket.get.bind(lake.bucket);
    lake.bucket.get = async (key) => (read.push(key), get(key));
    expect(await lake.erasures.findHours(newRequest('org-a', selector({ user_ids: ['alice'] }), REQUESTED))).toEqual(found(['01', '03']));
    expect(read.sort()).toEqual([indexKey(hourSlice('01'), 'spans'), indexKey(hourSlice('01'), 'traces'), indexKey(hourSlice('04'), 'spans'), indexKey(hourSlice('04'), 'traces'), manifestKey(hourSlice('04'))].sort());
  });

  it('finds nothing in an organization with no objects', async () => {
    expect(await new Lake().erasures.findHours(newRequest('org-a', selector({ user_ids: ['alice'] }), REQUESTED))).toEqual([]);
  });
});

describe('indexHour', () => {
  it('writes the first 16 hex digits of each id\'s keyed hash, by kind, sorted, empty ids left out', async () => {
    const lake = new Lake();
    await lake.erasures.indexHour(hourSlice('10'), 'spans', ids({ users: ['alice', ''], sessions: ['alice'], traces: [T9] }));
    const expected = [selectorHmac(KEY, 'user', 'alice'), selectorHmac(KEY, 'session', 'alice'), selectorHmac(KEY, 'trace', T9)].map((hmac) => hmac.slice(0, 16)).sort();
    expect(Buffer.from(lake.bucket.objects.get(indexKey(hourSlice('10'), 'spans'))!.body).toString()).toBe(`${JSON.stringify({ keys: expected })}\n`);
    expect(lake.bucket.keys()).toEqual([indexKey(hourSlice('10'), 'spans')]);
  });
});

describe('the requests of an organization', () => {
  it('reads them back in the order requested, each by its key, by id alone, and none of another organization', async () => {
    const { erasures, bucket } = new Lake();
    const later = newRequest('org-a', selector({ user_ids: ['bob'] }), new Date('2026-11-24T00:00:00Z'), 'er_a');
    const earlier = newRequest('org-a', selector({ user_ids: ['alice'] }), REQUESTED, 'er_b');
    const same = newRequest('org-a', selector({ user_ids: ['carol'] }), REQUESTED, 'er_c');
    const other = newRequest('org-b', selector({ user_ids: ['alice'] }), REQUESTED, 'er_d');
    for (const request of [later, earlier, same, other]) await erasures.put(request);
    expect(bucket.keys('erasures/requests/org_id=org-a/')).toEqual([requestKey('org-a', 'er_a'), requestKey('org-a', 'er_b'), requestKey('org-a', 'er_c')]);
    expect(await erasures.requests('org-a')).toEqual([earlier, same, later]);
    expect(await erasures.requests('org-c')).toEqual([]);
    expect(await erasures.request('org-a', 'er_b')).toEqual(earlier);
    expect(await erasures.request('org-a', 'er_d')).toBeUndefined();
    expect(await erasures.requestById('er_d')).toEqual(other);
    expect(await erasures.requestById('er_x')).toBeUndefined();
  });

  it('orders many requests by the moment requested, whatever their ids', async () => {
    const { erasures } = new Lake();
    // Ids in key order name the requests in a shuffled order of time (a fixed permutation: 37 is prime to 100).
    const moments = Array.from({ length: 100 }, (_, i) => new Date(REQUESTED.getTime() + ((i * 37) % 100) * 1000));
    for (const [i, at] of moments.entries()) await erasures.put(newRequest('org-a', selector({ user_ids: [`u${i}`] }), at, `er_${String(i).padStart(3, '0')}`));
    const read = await erasures.requests('org-a');
    expect(read.map((request) => request.requested_at)).toEqual([...moments].sort((a, b) => a.getTime() - b.getTime()).map((at) => at.toISOString()));
  });

  it('lists as open every request not done, across organizations, skipping other objects under the requests prefix', async () => {
    const lake = new Lake();
    const pending = newRequest('org-a', selector({ user_ids: ['alice'] }), REQUESTED, 'er_a');
    const running = { ...newRequest('org-b', selector({ user_ids: ['bob'] }), REQUESTED, 'er_b'), status: 'running' as const, hours: [] };
    const done = doneRequest(newRequest('org-a', selector({ user_ids: ['carol'] }), REQUESTED, 'er_c'), KEY, NOW);
    for (const request of [pending, running, done]) await lake.erasures.put(request);
    lake.object('erasures/requests/notes.txt');
    expect(await openRequests(lake.bucket, lake.erasures)).toEqual([pending, running]);
  });
});

describe('forSlice: what compaction applies to a slice', () => {
  const slice = hourSlice('10');

  it('is undefined for an organization without requests, and reads no secret', async () => {
    const lake = new Lake();
    await lake.erasures.put(newRequest('org-b', selector({ user_ids: ['alice'] }), REQUESTED));
    expect(await lake.erasures.forSlice(slice)).toBeUndefined();
    expect(lake.secret.reads).toBe(0);
  });

  it('applies the requests not done whose outcome for the hour is not recorded, and matches every request of the organization', async () => {
    const lake = new Lake();
    const pending = newRequest('org-a', selector({ user_ids: ['alice'] }), REQUESTED, 'er_a');
    const recorded = { ...newRequest('org-a', selector({ user_ids: ['bob'] }), REQUESTED, 'er_b'), status: 'running' as const, hours: ['2026-11-22/10'] };
    const elsewhere = { ...newRequest('org-a', selector({ session_ids: ['conv-1'] }), REQUESTED, 'er_c'), status: 'running' as const, hours: ['2026-11-22/10'] };
    for (const request of [pending, recorded, elsewhere]) await lake.erasures.put(request);
    lake.object(outcomeKey('org-a', 'er_b', '2026-11-22/10')).object(outcomeKey('org-a', 'er_c', '2026-11-22/11'));
    const erasure = (await lake.erasures.forSlice(slice))!;
    expect(erasure.applying).toEqual(['er_a', 'er_c']);
    const row = (fields: Partial<{ user_id: string; session_id: string }>) => ({ trace_id: 't', user_id: '', session_id: '', received_at: 0n, ...fields });
    expect([erasure.matching(row({ user_id: 'alice' })), erasure.matching(row({ user_id: 'bob' })), erasure.matching(row({ session_id: 'conv-1' })), erasure.matching(row({ user_id: 'dave' }))]).toEqual([['er_a'], ['er_b'], ['er_c'], []]);
    // No request is done: nothing is matched through a keyed hash, and the secret is not read.
    expect(lake.secret.reads).toBe(0);
  });

  // A replay lands an erased user's trace again after her request is done, while another request of the organization
  // is open: the done request still matches, through its keyed hashes.
  it('matches a done request\'s ids through the secret while another request is open, and applies only the open one', async () => {
    const lake = new Lake();
    await lake.erasures.put(doneRequest(newRequest('org-a', selector({ user_ids: ['alice'] }), REQUESTED, 'er_a'), KEY, NOW));
    await lake.erasures.put(newRequest('org-a', selector({ user_ids: ['bob'] }), NOW, 'er_b'));
    const erasure = (await lake.erasures.forSlice(slice))!;
    expect(erasure.applying).toEqual(['er_b']);
    const replayed = { trace_id: 't', user_id: 'alice', session_id: '', received_at: BigInt(REQUESTED.getTime()) * 1000n };
    expect(erasure.matching(replayed)).toEqual(['er_a']);
    expect(erasure.matching({ ...replayed, user_id: 'bob' })).toEqual(['er_b']);
    expect(erasure.matching({ ...replayed, user_id: 'carol' })).toEqual([]);
    expect(lake.secret.reads).toBe(1);
  });
});

describe('the records\' content type', () => {
  it('writes requests, outcomes and the index as JSON', async () => {
    const lake = new Lake();
    const types = new Map<string, string>();
    const put = lake.bucket.put.bind(lake.bucket);
    lake.bucket.put = async (key: string, body: Uint8Array, contentType?: string) => (types.set(key, contentType ?? ''), put(key, body));
    await lake.erasures.put(newRequest('org-a', selector({ user_ids: ['alice'] }), REQUESTED, 'er_a'));
    await lake.erasures.recordHour(hourSlice('10'), new Map([['er_a', { rowsRemoved: 0, bytesRewritten: 0, bytesOfHour: 0, objectsDeleted: 0 }]]));
    await lake.erasures.indexHour(hourSlice('10'), 'traces', ids());
    expect([...types.values()]).toEqual(['application/json', 'application/json', 'application/json']);
    expect(types.size).toBe(3);
  });
});

describe('recordHour', () => {
  it('writes one outcome per request applied, under that request, for the hour', async () => {
    const lake = new Lake();
    const erased = { rowsRemoved: 3, bytesRewritten: 100, bytesOfHour: 200, objectsDeleted: 4 };
    await lake.erasures.recordHour(hourSlice('10'), new Map([['er_a', erased], ['er_b', erased]]));
    expect(lake.bucket.keys()).toEqual([outcomeKey('org-a', 'er_a', '2026-11-22/10'), outcomeKey('org-a', 'er_b', '2026-11-22/10')]);
    const [outcome] = await lake.erasures.outcomes({ org_id: 'org-a', erasure_id: 'er_b' });
    expect(outcome).toMatchObject({ erasure_id: 'er_b', hour: '2026-11-22/10', bytes_of_hour: 200, objects_deleted: 4 });
    expect(Date.parse(outcome!.done_at)).not.toBeNaN();
    expect(await lake.erasures.outcomes({ org_id: 'org-a', erasure_id: 'er_c' })).toEqual([]);
  });
});

describe('erasureStatus', () => {
  const outcome = (erasureId: string, hour: string, rows: number) => ({ erasure_id: erasureId, hour, rows_removed: rows, bytes_rewritten: rows * 10, bytes_of_hour: rows * 100, objects_deleted: 1, done_at: NOW.toISOString() });

  it('shows a running request\'s selector and sums its hours\' outcomes; a done request keeps only hashes', async () => {
    const lake = new Lake();
    const running: ErasureRequest = { ...newRequest('org-a', selector({ user_ids: ['alice'], session_ids: ['conv-1'], trace_ids: [T9] }), REQUESTED, 'er_a'), status: 'running', hours: ['2026-11-22/10', '2026-11-22/11', '2026-11-22/12'] };
    for (const [hour, rows] of [['2026-11-22/10', 3], ['2026-11-22/11', 5]] as const) {
      lake.bucket.objects.set(outcomeKey('org-a', 'er_a', hour), { body: Buffer.from(JSON.stringify(outcome('er_a', hour, rows))), etag: hour });
    }
    expect(await erasureStatus(lake.erasures, running)).toEqual({
      erasure_id: 'er_a',
      org_id: 'org-a',
      status: 'running',
      requested_at: REQUESTED.toISOString(),
      done_at: null,
      selector: { user_ids: ['alice'], session_ids: ['conv-1'], trace_ids: [T9] },
      selector_kept_as: 'plain',
      hours_found: 3,
      hours_done: 2,
      rows_removed: 8,
      bytes_rewritten: 80,
      bytes_of_hours: 800,
    });
    expect(await erasureStatus(lake.erasures, doneRequest(running, KEY, NOW))).toMatchObject({ status: 'done', done_at: NOW.toISOString(), selector: null, selector_kept_as: 'hmac-sha256', hours_found: 3, hours_done: 2 });
    expect(await erasureStatus(lake.erasures, newRequest('org-a', selector({ user_ids: ['bob'] }), REQUESTED, 'er_b'))).toMatchObject({ status: 'pending', hours_found: null, hours_done: 0, rows_removed: 0 });
  });

  // Another request's rewrite applies every open request: an hour can be done for a request before its search, which
  // then finds nothing there. Every hour done is an hour found, and an hour both found and done counts once.
  it('counts the hours done before the search as found, and an hour found and done once', async () => {
    const lake = new Lake();
    const record = (erasureId: string, hour: string) => lake.bucket.objects.set(outcomeKey('org-a', erasureId, hour), { body: Buffer.from(JSON.stringify(outcome(erasureId, hour, 2))), etag: hour });
    record('er_p', '2026-11-22/10');
    const pending = newRequest('org-a', selector({ user_ids: ['pat'] }), REQUESTED, 'er_p');
    expect(await erasureStatus(lake.erasures, pending)).toMatchObject({ status: 'pending', hours_found: 1, hours_done: 1, rows_removed: 2 });
    const searched: ErasureRequest = { ...pending, status: 'running', hours: [] };
    expect(await erasureStatus(lake.erasures, searched)).toMatchObject({ hours_found: 1, hours_done: 1 });
    record('er_p', '2026-11-22/12');
    const found: ErasureRequest = { ...pending, status: 'running', hours: ['2026-11-22/10', '2026-11-22/11'] };
    expect(await erasureStatus(lake.erasures, found)).toMatchObject({ hours_found: 3, hours_done: 2, rows_removed: 4 });
  });
});

describe('planErasures', () => {
  const fingerprint = (id: string, requestIds: string[]) => createHash('sha256').update(`erasure\n${id}\n${requestIds.join('\n')}`).digest('hex');

  it('finds a pending request\'s hours and makes it running, plans each hour once for every request needing it, and finishes a request with every hour done', async () => {
    const lake = new Lake();
    await lake.index('10', ids({ users: ['alice', 'bob'] }));
    lake.manifest('10');
    await lake.index('11', ids({ users: ['alice'] }));
    lake.manifest('11');
    const alice = newRequest('org-a', selector({ user_ids: ['alice'] }), REQUESTED, 'er_b');
    const bob: ErasureRequest = { ...newRequest('org-a', selector({ user_ids: ['bob'] }), REQUESTED, 'er_a'), status: 'running', hours: ['2026-11-22/10'] };
    const finished: ErasureRequest = { ...newRequest('org-a', selector({ user_ids: ['carol'] }), REQUESTED, 'er_c'), status: 'running', hours: ['2026-11-22/12'] };
    const nothingFound = newRequest('org-a', selector({ user_ids: ['nobody'] }), REQUESTED, 'er_d');
    const unplanned: ErasureRequest = { ...newRequest('org-b', selector({ user_ids: ['dave'] }), REQUESTED, 'er_e'), status: 'running' };
    for (const request of [alice, bob, finished, nothingFound, unplanned]) await lake.erasures.put(request);
    await lake.erasures.recordHour(hourSlice('12'), new Map([['er_c', { rowsRemoved: 1, bytesRewritten: 1, bytesOfHour: 1, objectsDeleted: 1 }]]));
    lake.object(rawKey('09', 1, 'traces', 'org-b'));

    const plan = await planErasures(lake.bucket, lake.erasures, lake.secret, () => NOW);

    expect(plan.found).toEqual(['er_b', 'er_d', 'er_e']);
    expect(plan.finished).toEqual(['er_c', 'er_d']);
    expect(plan.slices).toEqual([hourSlice('10'), hourSlice('11'), hourSlice('09', 'org-b')]);
    expect(plan.fingerprints).toEqual(
      new Map([
        ['org-a/2026-11-22/10', fingerprint('org-a/2026-11-22/10', ['er_a', 'er_b'])],
        ['org-a/2026-11-22/11', fingerprint('org-a/2026-11-22/11', ['er_b'])],
        ['org-b/2026-11-22/09', fingerprint('org-b/2026-11-22/09', ['er_e'])],
      ]),
    );
    expect(await lake.erasures.request('org-a', 'er_b')).toEqual({ ...alice, status: 'running', hours: ['2026-11-22/10', '2026-11-22/11'] });
    expect(await lake.erasures.request('org-b', 'er_e')).toEqual({ ...unplanned, hours: ['2026-11-22/09'] });
    expect(await lake.erasures.request('org-a', 'er_c')).toEqual(doneRequest(finished, KEY, NOW));
    expect(await lake.erasures.request('org-a', 'er_d')).toEqual(doneRequest({ ...nothingFound, status: 'running', hours: [] }, KEY, NOW));
    expect(await lake.erasures.request('org-a', 'er_a')).toEqual(bob);
  });

  it('plans the hours in the order of their ids, fingerprints the requests whatever order they were listed in, and finds a pending request\'s hours afresh', async () => {
    const lake = new Lake();
    // Listed by key, er_a-.json comes before er_a.json, but er_a sorts before er_a-.
    const needsEleven: ErasureRequest = { ...newRequest('org-a', selector({ user_ids: ['bob'] }), REQUESTED, 'er_a-'), status: 'running', hours: ['2026-11-22/11', '2026-11-22/10'] };
    const needsTen: ErasureRequest = { ...newRequest('org-a', selector({ user_ids: ['carol'] }), REQUESTED, 'er_a'), status: 'running', hours: ['2026-11-22/10'] };
    // Pending with hours of an earlier look: they are looked for again (none are left).
    const stale: ErasureRequest = { ...newRequest('org-a', selector({ user_ids: ['dave'] }), REQUESTED, 'er_b'), hours: ['2026-11-22/05'] };
    for (const request of [needsEleven, needsTen, stale]) await lake.erasures.put(request);
    const plan = await planErasures(lake.bucket, lake.erasures, lake.secret, () => NOW);
    expect(plan.slices).toEqual([hourSlice('10'), hourSlice('11')]);
    expect([...plan.fingerprints]).toEqual([
      ['org-a/2026-11-22/10', fingerprint('org-a/2026-11-22/10', ['er_a', 'er_a-'])],
      ['org-a/2026-11-22/11', fingerprint('org-a/2026-11-22/11', ['er_a-'])],
    ]);
    expect(plan.found).toEqual(['er_b']);
    expect(plan.finished).toEqual(['er_b']);
  });

  it('plans nothing when no request is open', async () => {
    const lake = new Lake();
    await lake.erasures.put(doneRequest(newRequest('org-a', selector({ user_ids: ['alice'] }), REQUESTED), KEY, NOW));
    expect(await planErasures(lake.bucket, lake.erasures, lake.secret, () => NOW)).toEqual({ slices: [], fingerprints: new Map(), found: [], finished: [] });
  });
});
