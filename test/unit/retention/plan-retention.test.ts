/**
 * The retention sweep's plan on a bucket of placeholder objects (the sweep lists and deletes, and reads nothing):
 * which hours go in which step, which organizations are listed at all, what is counted and logged. The sweep on
 * compacted hours read through the views is test/unit/retention/sweep-retention.test.ts.
 */
import { compactedObjectKey, manifestKey, partPlanKey } from '../../../lambda/lake/keys/compacted-keys.js';
import { indexKey } from '../../../lambda/lake/keys/erasure-keys.js';
import { landingObjectKey } from '../../../lambda/lake/keys/raw-keys.js';
import type { HourExpiry } from '../../../lambda/lake/ports.js';
import { ORGANIZATIONS_SWEPT_IN_PARALLEL, RetentionSweepError, planRetention } from '../../../lambda/retention/plan-retention.js';
import { listedRetentionBucket } from '../../../lambda/retention/listed-retention-bucket.js';
import type { RetentionBucket } from '../../../lambda/retention/ports.js';
import { sweepRetention } from '../../../lambda/retention/sweep-retention.js';
import type { Organization, Plan } from '../../../lambda/shared/domain/tenancy.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';

// Retention 3 days: the cutoff is 2026-11-25T12:00, the readers' grace (2 h) puts the clearing cutoff at 10:00.
const NOW = new Date('2026-11-28T12:00:00.000Z');
const HOUR = 60 * 60 * 1000;

const plan = (name: string, extra: Partial<Plan> = {}): Plan => ({ name, quotas: { minute: null, hour: null, day: null, month: null }, createdAt: '', updatedAt: '', ...extra });
const org = (orgId: string, planName: string, extra: Partial<Organization> = {}): Organization => ({ orgId, plan: planName, overrides: {}, planStatus: 'active', billingStatus: 'ok', createdAt: '', updatedAt: '', ...extra });
const slice = (orgId: string, dtHour: string) => ({ orgId, dt: dtHour.slice(0, 10), hour: dtHour.slice(11, 13) });
const rawKey = (orgId: string, dtHour: string, dataset: 'traces' | 'spans' = 'traces') => landingObjectKey(dataset, { ...slice(orgId, dtHour), shardId: 's0', firstSequenceNumber: '1' });

/**
 * An organization's hours in every state the sweep tells apart. Past retention: 25T11 (the last hour ended by the
 * cutoff; raw, manifest and compacted objects), 24T23 (a manifest alone); within it: 25T12 (raw). Only
 * compacted leftovers: 25T09 (compacted objects), 25T08 (a part plan), 25T07 (an index), all past the grace, and
 * 25T10 (compacted objects) within it. Overflow objects of the 24th (past) and the 25th (not: the day has not ended by the cutoff).
 */
function hoursOf(orgId: string): Record<string, number> {
  return {
    [rawKey(orgId, '2026-11-25T11')]: 100,
    [rawKey(orgId, '2026-11-25T11', 'spans')]: 200,
    [manifestKey(slice(orgId, '2026-11-25T11'))]: 1,
    [compactedObjectKey('traces', slice(orgId, '2026-11-25T11'), 1)]: 1,
    [manifestKey(slice(orgId, '2026-11-24T23'))]: 1,
    [rawKey(orgId, '2026-11-25T12')]: 1,
    [compactedObjectKey('spans', slice(orgId, '2026-11-25T09'), 1)]: 1,
    [partPlanKey(slice(orgId, '2026-11-25T08'), 2, 'p')]: 1,
    [indexKey(slice(orgId, '2026-11-25T07'), 'traces')]: 1,
    [compactedObjectKey('traces', slice(orgId, '2026-11-25T10'), 1)]: 1,
    [`overflow/org_id=${orgId}/dt=2026-11-24/req/0-t.json.gz`]: 40,
    [`overflow/org_id=${orgId}/dt=2026-11-24/req/1-u.json.gz`]: 2,
    [`overflow/org_id=${orgId}/dt=2026-11-25/req/0-t.json.gz`]: 1,
  };
}

function bucketOf(...orgIds: string[]) {
  const bucket = new MemoryBucket();
  for (const orgId of orgIds) for (const [key, size] of Object.entries(hoursOf(orgId))) bucket.objects.set(key, { body: new Uint8Array(size), etag: key });
  return bucket;
}

function recorded() {
  const expiries: HourExpiry[][] = [];
  const logs: { level: 'info' | 'error'; message: string; extra: Record<string, unknown> }[] = [];
  return {
    expiries,
    logs,
    sink: { expire: async (hours: readonly HourExpiry[]) => void expiries.push([...hours]) },
    logger: {
      info: (message: string, extra: Record<string, unknown> = {}) => void logs.push({ level: 'info', message, extra }),
      error: (message: string, extra: Record<string, unknown> = {}) => void logs.push({ level: 'error', message, extra }),
    },
  };
}

const tenancy = (orgs: Organization[], plans: Plan[]) => ({ listOrganizations: async () => orgs, listPlans: async () => plans });

describe('planRetention', () => {
  it('sends the hours past retention for their first step, the compacted leftovers past the grace for the second, and deletes overflow days past it', async () => {
    const bucket = bucketOf('short');
    const { expiries, logs, sink, logger } = recorded();
    const result = await planRetention({ bucket: listedRetentionBucket(bucket), tenancy: tenancy([org('short', 'team')], [plan('team', { retentionDays: 3 })]), sink, logger, now: () => NOW });

    expect(expiries).toEqual([
      [
        { slice: slice('short', '2026-11-25T11'), deleteCompacted: false },
        { slice: slice('short', '2026-11-24T23'), deleteCompacted: false },
        { slice: slice('short', '2026-11-25T09'), deleteCompacted: true },
        { slice: slice('short', '2026-11-25T08'), deleteCompacted: true },
        { slice: slice('short', '2026-11-25T07'), deleteCompacted: true },
      ],
    ]);
    const sweep = { org_id: 'short', retention: { days: 3, source: 'plan' }, hoursExpired: 2, hoursCleared: 3, overflowObjectsDeleted: 2, overflowBytesDeleted: 42 };
    expect(result).toEqual({ at: NOW.toISOString(), organizations: [sweep], kept: 0, skipped: [] });
    expect(bucket.keys('overflow/')).toEqual(['overflow/org_id=short/dt=2026-11-25/req/0-t.json.gz']);
    // The plan deletes nothing of an hour itself: that is the sink's.
    expect(bucket.keys().filter((key) => !key.startsWith('overflow/'))).toHaveLength(10);
    expect(logs).toEqual([{ level: 'info', message: 'Retention: hours past retention sent for deletion', extra: sweep }]);
  });

  it('clears the compacted objects of an hour once the grace it is given has passed', async () => {
    const { expiries, sink } = recorded();
    await planRetention({ bucket: listedRetentionBucket(bucketOf('short')), tenancy: tenancy([org('short', 'team')], [plan('team', { retentionDays: 3 })]), sink, now: () => NOW, readerGraceMs: 0 });
    expect(expiries[0]!.filter((expiry) => expiry.deleteCompacted).map((expiry) => expiry.slice.hour)).toEqual(['10', '09', '08', '07']);
    const later = recorded();
    await planRetention({ bucket: listedRetentionBucket(bucketOf('short')), tenancy: tenancy([org('short', 'team')], [plan('team', { retentionDays: 3 })]), sink: later.sink, now: () => new Date(NOW.getTime() + HOUR) });
    expect(later.expiries[0]!.filter((expiry) => expiry.deleteCompacted).map((expiry) => expiry.slice.hour)).toEqual(['10', '09', '08', '07']);
  });

  it('lists no organization that keeps its data, nor one whose stored retention is invalid; the latter is logged and reported', async () => {
    const bucket = bucketOf('forever', 'no-plan', 'bad-org', 'bad-plan');
    const listed: string[] = [];
    const listing = listedRetentionBucket(bucket);
    const watched: RetentionBucket = { ...listing, listBefore: (prefix, bound) => (listed.push(prefix), listing.listBefore(prefix, bound)) };
    const { expiries, logs, sink, logger } = recorded();
    const orgs = [org('no-plan', 'gone'), org('forever', 'team', { retentionDays: null }), org('bad-org', 'team', { invalidRetention: '0' }), org('bad-plan', 'odd')];
    const result = await planRetention({ bucket: watched, tenancy: tenancy(orgs, [plan('team', { retentionDays: 3 }), plan('odd', { invalidRetention: '1.5' })]), sink, logger, now: () => NOW });
    expect(result).toEqual({
      at: NOW.toISOString(),
      organizations: [],
      kept: 2,
      skipped: [
        { org_id: 'bad-org', item: 'organization', plan: 'team', stored_retention_days: '0' },
        { org_id: 'bad-plan', item: 'plan', plan: 'odd', stored_retention_days: '1.5' },
      ],
    });
    expect(listed).toEqual([]);
    expect(expiries).toEqual([]);
    expect(bucket.keys()).toHaveLength(4 * Object.keys(hoursOf('x')).length);
    expect(logs.map((log) => [log.level, log.extra.org_id])).toEqual([['error', 'bad-org'], ['error', 'bad-plan']]);
    expect(logs[0]!.message).toBe('Retention: a stored retention_days is not a retention; nothing of the organization is deleted until it is fixed');
    expect(logs[1]!.extra).toEqual({ org_id: 'bad-plan', item: 'plan', plan: 'odd', stored_retention_days: '1.5' });
  });

  it('reports organizations in id order under the stack\'s ceiling, and sends and logs nothing for one with nothing past retention', async () => {
    const bucket = bucketOf('b-short');
    bucket.objects.set(rawKey('a-young', '2026-11-28T11'), { body: new Uint8Array(1), etag: 'x' });
    const { expiries, logs, sink, logger } = recorded();
    let deletes = 0;
    const listing = listedRetentionBucket(bucket);
    const counted: RetentionBucket = { ...listing, delete: (keys) => (deletes++, listing.delete(keys)) };
    const result = await planRetention({ bucket: counted, tenancy: tenancy([org('b-short', 'team'), org('a-young', 'team')], [plan('team')]), sink, logger, now: () => NOW, stackCeilingDays: 3 });
    expect(result.organizations.map((sweep) => [sweep.org_id, sweep.retention, sweep.hoursExpired, sweep.hoursCleared, sweep.overflowObjectsDeleted])).toEqual([
      ['a-young', { days: 3, source: 'stack' }, 0, 0, 0],
      ['b-short', { days: 3, source: 'stack' }, 2, 3, 2],
    ]);
    expect(expiries).toHaveLength(1);
    expect(deletes).toBe(1);
    expect(logs.map((log) => log.extra.org_id)).toEqual(['b-short']);
  });

  it('logs an organization that had only overflow objects past retention, or as many hours cleared as expired', async () => {
    const bucket = new MemoryBucket();
    const put = (key: string) => bucket.objects.set(key, { body: new Uint8Array(1), etag: key });
    put('overflow/org_id=only-overflow/dt=2026-11-24/req/0-t.json.gz');
    put(rawKey('balanced', '2026-11-25T11'));
    put(compactedObjectKey('traces', slice('balanced', '2026-11-25T09'), 1));
    const { logs, sink, logger } = recorded();
    await planRetention({ bucket: listedRetentionBucket(bucket), tenancy: tenancy([org('only-overflow', 'team'), org('balanced', 'team')], [plan('team', { retentionDays: 3 })]), sink, logger, now: () => NOW });
    expect(logs.map((log) => [log.extra.org_id, log.extra.hoursExpired, log.extra.hoursCleared, log.extra.overflowObjectsDeleted])).toEqual([
      ['balanced', 1, 1, 0],
      ['only-overflow', 0, 0, 1],
    ]);
  });

  it('sweeps the others when some organizations fail, then fails the run naming the first ten, with what it did', async () => {
    const ids = Array.from({ length: 12 }, (_, i) => `org-${String(i).padStart(2, '0')}`);
    const bucket = bucketOf(...ids);
    const listing = listedRetentionBucket(bucket);
    const failing: RetentionBucket = { ...listing, listBefore: (prefix, bound) => (prefix.includes('org_id=org-11/') ? listing.listBefore(prefix, bound) : Promise.reject(new Error('SlowDown'))) };
    const { logs, sink, logger } = recorded();
    const run = planRetention({ bucket: failing, tenancy: tenancy(ids.map((id) => org(id, 'team')), [plan('team', { retentionDays: 3 })]), sink, logger, now: () => NOW });
    const error = await run.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RetentionSweepError);
    expect((error as RetentionSweepError).name).toBe('RetentionSweepError');
    expect((error as RetentionSweepError).message).toBe(`could not sweep 11 of 12 organizations (${ids.slice(0, 10).join(', ')}); the others were swept`);
    expect((error as RetentionSweepError).plan.organizations.map((sweep) => sweep.org_id)).toEqual(['org-11']);
    expect(bucket.keys('overflow/org_id=org-11/')).toHaveLength(1);
    const errors = logs.filter((log) => log.level === 'error');
    expect(errors).toHaveLength(11);
    expect(errors[0]).toEqual({ level: 'error', message: 'Retention: an organization could not be swept; the next run tries again', extra: { org_id: 'org-00', error: new Error('SlowDown') } });
  });

  it(`sweeps at most ${ORGANIZATIONS_SWEPT_IN_PARALLEL} organizations at once`, async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `org-${i}`);
    const listing = listedRetentionBucket(new MemoryBucket());
    let inFlight = 0;
    let most = 0;
    const slow: RetentionBucket = {
      ...listing,
      listBefore: async (prefix, bound) => {
        most = Math.max(most, ++inFlight);
        await new Promise((resolve) => setTimeout(resolve, 1));
        inFlight--;
        return listing.listBefore(prefix, bound);
      },
    };
    const result = await planRetention({ bucket: slow, tenancy: tenancy(ids.map((id) => org(id, 'team')), [plan('team', { retentionDays: 3 })]), sink: recorded().sink, now: () => NOW });
    expect(result.organizations).toHaveLength(20);
    expect(most).toBe(ORGANIZATIONS_SWEPT_IN_PARALLEL);
    expect(ORGANIZATIONS_SWEPT_IN_PARALLEL).toBe(8);
  });
});

describe('sweepRetention', () => {
  it('deletes each hour sent in this process and counts every object and byte it deleted, overflow objects included', async () => {
    const bucket = bucketOf('short');
    const before = new Map([...bucket.objects].map(([key, object]) => [key, object.body.byteLength]));
    const swept = await sweepRetention({ store: bucket, bucket: listedRetentionBucket(bucket), tenancy: tenancy([org('short', 'team')], [plan('team', { retentionDays: 3 })]), now: () => NOW });
    const gone = [...before.keys()].filter((key) => !bucket.objects.has(key));
    expect(swept.deleted.map((hour) => [hour.slice.hour, hour.deleteCompacted, hour.objectsDeleted])).toEqual([
      ['11', false, 3],
      ['23', false, 1],
      ['09', true, 1],
      ['08', true, 1],
      ['07', true, 1],
    ]);
    expect(swept.objectsDeleted).toBe(gone.length);
    expect(swept.objectsDeleted).toBe(9);
    expect(swept.bytesDeleted).toBe(gone.reduce((sum, key) => sum + before.get(key)!, 0));
    expect(swept.bytesDeleted).toBe(100 + 200 + 1 + 1 + 1 + 1 + 1 + 42);
    expect(swept.organizations).toHaveLength(1);
  });
});
