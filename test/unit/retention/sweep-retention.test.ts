import { compactPending } from '../../../lambda/compaction/compact-pending.js';
import { hourIndexPrefix, indexKey } from '../../../lambda/lake/keys/erasure-keys.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import type { AcceptedTrace } from '../../../lambda/shared/domain/trace.js';
import type { Organization, Plan } from '../../../lambda/shared/domain/tenancy.js';
import { expireHour } from '../../../lambda/lake/lifecycle/expire-hour.js';
import { listedRetentionBucket } from '../../../lambda/retention/listed-retention-bucket.js';
import { READERS_GRACE_MS } from '../../../lambda/lake/readers-grace.js';
import type { RetentionTenancy } from '../../../lambda/retention/ports.js';
import { firstKeptDayKey, firstKeptHourKey } from '../../../lambda/lake/keys/hour-prefixes.js';
import { sweepRetention } from '../../../lambda/retention/sweep-retention.js';
import { acceptedSpan, acceptedTrace, inlineRecord, traceContext } from '../../../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';
import { visible } from '../compaction/bucket-views.js';

const NOW = new Date('2026-11-28T12:00:00.000Z');
const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;

const plan = (name: string, retentionDays?: number): Plan => ({ name, quotas: { minute: null, hour: null, day: null, month: null }, ...(retentionDays ? { retentionDays } : {}), createdAt: '', updatedAt: '' });
const org = (orgId: string, planName: string, retentionDays?: number | null): Organization => ({
  orgId,
  plan: planName,
  overrides: {},
  ...(retentionDays === undefined ? {} : { retentionDays }),
  planStatus: 'active',
  billingStatus: 'ok',
  createdAt: '',
  updatedAt: '',
});
const tenancy = (orgs: Organization[], plans: Plan[]): RetentionTenancy => ({ listOrganizations: async () => orgs, listPlans: async () => plans });

/** A trace of `orgId` in the hour starting at `hourStart`, with its spans in the same hour. */
function traceAt(hourStart: Date): AcceptedTrace {
  const at = new Date(hourStart.getTime() + 5 * 60 * 1000).toISOString().replace('Z', '000Z');
  return acceptedTrace({ timestamp: at, spans: [acceptedSpan({ timestamp: at }, 0), acceptedSpan({ timestamp: at }, 1)] });
}

let sequence = 0;
async function land(bucket: MemoryBucket, orgId: string, hourStart: Date, count = 2): Promise<AcceptedTrace[]> {
  const traces = Array.from({ length: count }, () => traceAt(hourStart));
  await landRecords({ store: bucket }, traces.map((trace) => inlineRecord(++sequence, trace, traceContext({ org_id: orgId, received_at: hourStart.toISOString() }))));
  return traces;
}

const hourKey = (date: Date) => `dt=${date.toISOString().slice(0, 10)}/hour=${date.toISOString().slice(11, 13)}/`;

/** Every write the bucket is asked for, with its bytes: the sweep must make none. */
function countWrites(bucket: MemoryBucket): { bytes: number; writes: number } {
  const counted = { bytes: 0, writes: 0 };
  const put = bucket.put.bind(bucket);
  const uploadPart = bucket.uploadPart.bind(bucket);
  bucket.put = async (key: string, body: Uint8Array) => {
    counted.writes++;
    counted.bytes += body.byteLength;
    return put(key, body);
  };
  bucket.uploadPart = async (key, id, part, body) => {
    counted.writes++;
    counted.bytes += body.byteLength;
    return uploadPart(key, id, part, body);
  };
  return counted;
}

describe('the retention sweep', () => {
  // Retention 3 days: the hour that ended 3 days and 1 hour ago is past it, the hour that ends 2 days ago is not.
  const oldHour = new Date(Date.UTC(2026, 10, 25, 10));
  const keptHour = new Date(Date.UTC(2026, 10, 26, 12));

  async function lake() {
    const bucket = new MemoryBucket();
    const short = { old: await land(bucket, 'short', oldHour), kept: await land(bucket, 'short', keptHour) };
    await land(bucket, 'forever', oldHour);
    await compactPending({ store: bucket, now: () => NOW });
    // Late data of the old hour, not compacted yet: its raw objects are uncovered.
    short.old.push(...(await land(bucket, 'short', oldHour, 1)));
    // Overflow objects carry the day they were received, and no hour.
    for (const day of ['2026-11-24', '2026-11-25', '2026-11-26']) bucket.objects.set(`overflow/org_id=short/dt=${day}/req/0-t.json.gz`, { body: new Uint8Array(10), etag: day });
    return { bucket, short };
  }

  const deps = (bucket: MemoryBucket, now = NOW) => ({
    store: bucket,
    bucket: listedRetentionBucket(bucket),
    tenancy: tenancy([org('short', 'team'), org('forever', 'team', null)], [plan('team', 3)]),
    now: () => now,
  });

  it('deletes every object of the hours past retention in two runs, rewrites nothing, and leaves the hours within it as they were', async () => {
    const { bucket, short } = await lake();
    const before = new Map([...bucket.objects].map(([key, object]) => [key, object.etag]));
    const sizes = new Map([...bucket.objects].map(([key, object]) => [key, object.body.byteLength]));
    const written = countWrites(bucket);
    const ids = async () => (await visible(bucket, 'traces')).map((row) => row.trace_id as string).sort();
    const keptIds = [...short.kept.map((t) => t.trace_id)];
    expect(await ids()).toEqual(expect.arrayContaining([...short.old, ...short.kept].map((t) => t.trace_id)));

    const first = await sweepRetention(deps(bucket));
    expect(first.organizations).toEqual([expect.objectContaining({ org_id: 'short', retention: { days: 3, source: 'plan' }, hoursExpired: 1, hoursCleared: 0, overflowObjectsDeleted: 1 })]);
    expect(first.kept).toBe(1);
    // The old hour is out of every view at once; its compacted objects wait out the readers' grace.
    expect((await ids()).filter((id) => !keptIds.includes(id) && short.old.some((t) => t.trace_id === id))).toEqual([]);
    const old = `org_id=short/${hourKey(oldHour)}`;
    expect(bucket.keys().filter((key) => key.includes(old))).toEqual([`compacted/spans/${old}g000001.parquet`, `compacted/traces/${old}g000001.parquet`]);

    // Two hours on (the readers' grace), the hour's compacted objects go.
    const second = await sweepRetention(deps(bucket, new Date(NOW.getTime() + 2 * HOUR)));
    expect(second.organizations[0]).toMatchObject({ hoursExpired: 0, hoursCleared: 1 });
    expect(bucket.keys().filter((key) => key.includes(old))).toEqual([]);
    // The cutoff is 2026-11-25T12:00: the 24th ended before it, the 25th did not.
    expect(bucket.keys('overflow/')).toEqual(['overflow/org_id=short/dt=2026-11-25/req/0-t.json.gz', 'overflow/org_id=short/dt=2026-11-26/req/0-t.json.gz']);

    expect(written).toEqual({ bytes: 0, writes: 0 });
    const deletedKeys = [...before.keys()].filter((key) => !bucket.objects.has(key));
    expect(deletedKeys.every((key) => key.includes(old) || key.startsWith('overflow/'))).toBe(true);
    for (const [key, object] of bucket.objects) expect({ key, etag: object.etag }).toEqual({ key, etag: before.get(key) });
    expect(first.objectsDeleted + second.objectsDeleted).toBe(deletedKeys.length);
    expect(first.bytesDeleted + second.bytesDeleted).toBe(deletedKeys.reduce((sum, key) => sum + sizes.get(key)!, 0));
    expect(await visible(bucket, 'traces')).toHaveLength(keptIds.length + 2);
  });

  it('clears the erasure index of an hour whose raw, manifest and compacted objects S3 lifecycle removed first', async () => {
    const { bucket } = await lake();
    const slice = { orgId: 'short', dt: oldHour.toISOString().slice(0, 10), hour: oldHour.toISOString().slice(11, 13) };
    for (const dataset of ['traces', 'spans'] as const) await bucket.put(indexKey(slice, dataset), Buffer.from('{"keys":[]}\n'));
    const old = `org_id=short/${hourKey(oldHour)}`;
    await bucket.delete(bucket.keys().filter((key) => key.includes(old) && !key.startsWith('erasures/')));
    const swept = await sweepRetention(deps(bucket, new Date(NOW.getTime() + 2 * HOUR)));
    expect(swept.organizations[0]).toMatchObject({ hoursCleared: 1 });
    expect(bucket.keys('erasures/')).toEqual([]);
  });

  it('clears compacted objects only a readers\' grace after the hour passed retention, and only once its manifest is gone', async () => {
    const { bucket } = await lake();
    const old = `org_id=short/${hourKey(oldHour)}`;
    // The old hour ended 3 days and 1 hour ago: with a grace longer than that hour, its compacted objects stay.
    const graceLonger = { ...deps(bucket), readerGraceMs: 2 * HOUR };
    await sweepRetention(graceLonger);
    await sweepRetention(graceLonger);
    expect(bucket.keys().filter((key) => key.includes(old))).toHaveLength(2);
    await sweepRetention({ ...graceLonger, now: () => new Date(NOW.getTime() + HOUR) });
    expect(bucket.keys().filter((key) => key.includes(old))).toEqual([]);
    expect(READERS_GRACE_MS).toBe(2 * HOUR);
  });

  it('takes the organization\'s override over its plan, and the stack\'s ceiling over both', async () => {
    const { bucket } = await lake();
    const orgs = [org('short', 'team', 30), org('forever', 'team', null)];
    const overridden = await sweepRetention({ ...deps(bucket), tenancy: tenancy(orgs, [plan('team', 3)]) });
    expect(overridden.organizations.map((o) => [o.org_id, o.retention, o.hoursExpired])).toEqual([['short', { days: 30, source: 'organization' }, 0]]);
    const capped = await sweepRetention({ ...deps(bucket), tenancy: tenancy(orgs, [plan('team', 3)]), stackCeilingDays: 2 });
    expect(capped.organizations.map((o) => [o.org_id, o.retention, o.hoursExpired])).toEqual([
      ['forever', { days: 2, source: 'stack' }, 1],
      // The kept hour ends at 13:00 on the 26th, after the cutoff of two days (12:00).
      ['short', { days: 2, source: 'stack' }, 1],
    ]);
  });
});

describe('a sweep in which one organization fails', () => {
  it('sweeps the others, then fails the run naming it', async () => {
    const bucket = new MemoryBucket();
    const hour = new Date(Date.UTC(2026, 10, 20, 10));
    await land(bucket, 'a-broken', hour);
    await land(bucket, 'b-fine', hour);
    const listed = listedRetentionBucket(bucket);
    const failing = { ...listed, listBefore: async (prefix: string, bound: string) => (prefix.includes('org_id=a-broken/') ? Promise.reject(new Error('SlowDown')) : listed.listBefore(prefix, bound)) };
    const orgs = [org('a-broken', 'team'), org('b-fine', 'team')];
    await expect(sweepRetention({ store: bucket, bucket: failing, tenancy: tenancy(orgs, [plan('team', 3)]), now: () => NOW })).rejects.toThrow('could not sweep 1 of 2 organizations (a-broken); the others were swept');
    expect(bucket.keys('traces/org_id=b-fine/')).toEqual([]);
    expect(bucket.keys('traces/org_id=a-broken/').length).toBeGreaterThan(0);
  });
});

describe('the deletion order of an expired hour', () => {
  /** A compacted hour with late raw data, and a reader of the exactly-once view run after every delete call. */
  async function watchedHour() {
    const bucket = new MemoryBucket();
    const hour = new Date(Date.UTC(2026, 10, 25, 10));
    const traces = await land(bucket, 'short', hour, 3);
    await compactPending({ store: bucket, now: () => NOW });
    await land(bucket, 'short', hour, 1);
    const seen: number[] = [];
    const remove = bucket.delete.bind(bucket);
    // The reader must read (no manifest names a missing object) and see no row twice, however far the deletion got.
    bucket.delete = async (keys) => {
      await remove(keys);
      const rows = (await visible(bucket, 'traces')).map((row) => row.trace_id as string);
      expect(new Set(rows).size).toBe(rows.length);
      seen.push(rows.length);
    };
    return { bucket, traces, seen, slice: { orgId: 'short', dt: '2026-11-25', hour: '10' } };
  }

  it('never leaves a reader a manifest naming a missing object, nor raw rows reappearing, in two steps', async () => {
    const { bucket, traces, seen, slice } = await watchedHour();
    await expireHour(bucket, { slice, deleteCompacted: false });
    await expireHour(bucket, { slice, deleteCompacted: true });
    // Raw objects (the late trace goes), the manifest (the hour goes), then the compacted objects.
    expect(seen).toEqual([traces.length, 0, 0]);
    expect(bucket.keys()).toEqual([]);
  });

  it('deletes the hour\'s erasure index (keyed hashes of its ids) with its compacted objects, not before', async () => {
    const { bucket, slice } = await watchedHour();
    for (const dataset of ['traces', 'spans'] as const) await bucket.put(indexKey(slice, dataset), Buffer.from('{"keys":[]}\n'));
    await expireHour(bucket, { slice, deleteCompacted: false });
    expect(bucket.keys(hourIndexPrefix(slice))).toHaveLength(2);
    await expireHour(bucket, { slice, deleteCompacted: true });
    expect(bucket.keys()).toEqual([]);
  });

  it('keeps the order, and defers the compacted objects, when a message asks for everything but the hour has a manifest again', async () => {
    // A second-step message queued behind a compaction of late data: the manifest it finds was written since the
    // first step, so its objects keep the readers' grace and go on a later run.
    const { bucket, traces, seen, slice } = await watchedHour();
    const first = await expireHour(bucket, { slice, deleteCompacted: true });
    expect(first.compactedDeferred).toBe(true);
    expect(seen).toEqual([traces.length, 0]);
    expect(bucket.keys().every((key) => key.startsWith('compacted/'))).toBe(true);
    const second = await expireHour(bucket, { slice, deleteCompacted: true });
    expect(second.compactedDeferred).toBe(false);
    expect(seen).toEqual([traces.length, 0, 0]);
    expect(bucket.keys()).toEqual([]);
  });
});

describe('the bounds of a retention', () => {
  it('expires an hour that ended at the cutoff, keeps the next, and goes by the day for day-keyed objects', () => {
    const cutoff = new Date(Date.UTC(2026, 10, 25, 11));
    expect(firstKeptHourKey('manifests/', 'o', cutoff)).toBe('manifests/org_id=o/dt=2026-11-25/hour=11/');
    expect(firstKeptHourKey('manifests/', 'o', new Date(cutoff.getTime() - 1))).toBe('manifests/org_id=o/dt=2026-11-25/hour=10/');
    expect(firstKeptDayKey('overflow/', 'o', cutoff)).toBe('overflow/org_id=o/dt=2026-11-25/');
    expect(firstKeptDayKey('overflow/', 'o', new Date(Date.UTC(2026, 10, 26)))).toBe('overflow/org_id=o/dt=2026-11-26/');
    expect(DAY).toBe(24 * HOUR);
  });
});
