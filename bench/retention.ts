/**
 * `npm run bench -- retention`: the retention sweep on a seeded lake (two organizations, 10 days of hours each,
 * landed, compacted, with late raw data and overflow objects), one of them on a 7-day retention. Two runs (the
 * second past the readers' grace) must delete every object of its hours past retention and write nothing; the
 * baseline is what the lake held of those hours before.
 */
import { performance } from 'node:perf_hooks';
import { compactPending } from '../lambda/compaction/compact-pending.js';
import { landRecords } from '../lambda/landing/land-records.js';
import { listedRetentionBucket } from '../lambda/retention/listed-retention-bucket.js';
import { READERS_GRACE_MS } from '../lambda/lake/readers-grace.js';
import type { RetentionBucket } from '../lambda/retention/ports.js';
import { sweepRetention } from '../lambda/retention/sweep-retention.js';
import type { Organization, Plan } from '../lambda/shared/domain/tenancy.js';
import { acceptedSpan, acceptedTrace, inlineRecord, traceContext } from '../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../devkit/fakes/memory-bucket.js';
import type { BenchResult } from './types.js';

const HOUR = 60 * 60 * 1000;
const DAYS = 10;
const RETENTION_DAYS = 7;
const TRACES_PER_HOUR = 5;
const NOW = new Date(Date.UTC(2026, 10, 28, 0, 30));

const organization = (orgId: string, retentionDays: number | null): Organization => ({ orgId, plan: 'team', overrides: {}, retentionDays, planStatus: 'active', billingStatus: 'ok', createdAt: '', updatedAt: '' });
const team: Plan = { name: 'team', quotas: { minute: null, hour: null, day: null, month: null }, createdAt: '', updatedAt: '' };

async function seededLake(): Promise<MemoryBucket> {
  const bucket = new MemoryBucket();
  let sequence = 0;
  const first = NOW.getTime() - DAYS * 24 * HOUR;
  for (let h = 0; h < DAYS * 24; h++) {
    const hour = new Date(first + h * HOUR);
    const at = new Date(hour.getTime() + 60_000).toISOString().replace('Z', '000Z');
    for (const orgId of ['short', 'kept']) {
      const traces = Array.from({ length: TRACES_PER_HOUR }, () => acceptedTrace({ timestamp: at, spans: [0, 1, 2].map((i) => acceptedSpan({ timestamp: at }, i)) }));
      await landRecords({ store: bucket }, traces.map((trace) => inlineRecord(++sequence, trace, traceContext({ org_id: orgId, received_at: hour.toISOString() }))));
    }
    if (h % 24 === 0) for (const orgId of ['short', 'kept']) await bucket.put(`overflow/org_id=${orgId}/dt=${hour.toISOString().slice(0, 10)}/req-${h}/0-t.json.gz`, new Uint8Array(2048));
  }
  await compactPending({ store: bucket, now: () => NOW }, { includeOpenHours: true });
  // Late data on every hour of the first day: raw objects its manifest does not cover.
  for (let h = 0; h < 24; h++) {
    const hour = new Date(first + h * HOUR);
    const at = new Date(hour.getTime() + 120_000).toISOString().replace('Z', '000Z');
    await landRecords({ store: bucket }, [inlineRecord(++sequence, acceptedTrace({ timestamp: at, spans: [] }), traceContext({ org_id: 'short', received_at: hour.toISOString() }))]);
  }
  return bucket;
}

export async function runRetentionBench(): Promise<BenchResult[]> {
  const bucket = await seededLake();
  const cutoff = NOW.getTime() - RETENTION_DAYS * 24 * HOUR;
  const later = cutoff + READERS_GRACE_MS;
  // What the two runs must delete: every object of short's hours that ended by the first run's cutoff (and of its
  // days, for overflow objects); the raw objects and manifests of the hours that ended by the second run's cutoff.
  const expired = (key: string): boolean => {
    const hourly = /org_id=short\/dt=(\d{4}-\d{2}-\d{2})\/hour=(\d{2})\//.exec(key);
    if (hourly) {
      const end = Date.parse(`${hourly[1]}T${hourly[2]}:00:00Z`) + HOUR;
      return end <= cutoff || (end <= later && !key.startsWith('compacted/'));
    }
    const daily = /^overflow\/org_id=short\/dt=(\d{4}-\d{2}-\d{2})\//.exec(key);
    return daily !== null && Date.parse(`${daily[1]}T00:00:00Z`) + 24 * HOUR <= later;
  };
  const before = new Map([...bucket.objects].map(([key, object]) => [key, { etag: object.etag, size: object.body.byteLength }]));
  const expiredKeys = [...before.keys()].filter(expired);
  const expiredBytes = expiredKeys.reduce((sum, key) => sum + before.get(key)!.size, 0);

  // Every write the sweep could make, counted with its bytes; and the listings it asks for.
  let bytesWritten = 0;
  let listings = 0;
  const put = bucket.put.bind(bucket);
  const uploadPart = bucket.uploadPart.bind(bucket);
  bucket.put = async (key: string, body: Uint8Array) => {
    bytesWritten += body.byteLength;
    return put(key, body);
  };
  bucket.uploadPart = async (key, id, part, body) => {
    bytesWritten += body.byteLength;
    return uploadPart(key, id, part, body);
  };
  const listed = listedRetentionBucket(bucket);
  const counted: RetentionBucket = { listBefore: (prefix, bound) => (listings++, listed.listBefore(prefix, bound)), delete: (keys) => listed.delete(keys) };
  const deps = (now: Date) => ({ store: bucket, bucket: counted, tenancy: { listOrganizations: async () => [organization('short', RETENTION_DAYS), organization('kept', null)], listPlans: async () => [team] }, now: () => now });

  const started = performance.now();
  const first = await sweepRetention(deps(NOW));
  const second = await sweepRetention(deps(new Date(NOW.getTime() + READERS_GRACE_MS)));
  const elapsedMs = performance.now() - started;
  const objectsDeleted = first.objectsDeleted + second.objectsDeleted;
  const bytesDeleted = first.bytesDeleted + second.bytesDeleted;
  const left = [...bucket.objects.keys()].filter(expired).length;
  const changed = [...bucket.objects].filter(([key, object]) => before.get(key)?.etag !== object.etag).length;
  const expiredHours = second.deleted.filter((hour) => hour.deleteCompacted).length;
  const note = `lake: 2 organizations x ${DAYS} days x 24 hours, ${TRACES_PER_HOUR} traces of 3 spans an hour, compacted, late raw data on the first day, one overflow object per org and day; 'short' on ${RETENTION_DAYS} days; two runs (NOW, NOW + 2 h readers' grace)`;
  return [
    { group: 'retention', metric: `objects deleted (${expiredHours} hours past retention + overflow days)`, value: objectsDeleted, unit: 'objects', baseline: expiredKeys.length, ratio: objectsDeleted / expiredKeys.length, target: '= 1 (every object of the expired hours)', note },
    { group: 'retention', metric: 'bytes deleted', value: bytesDeleted, unit: 'bytes', baseline: expiredBytes, ratio: bytesDeleted / expiredBytes, target: '= 1', note },
    { group: 'retention', metric: 'bytes rewritten (every PUT and upload part during the sweep)', value: bytesWritten, unit: 'bytes', baseline: expiredBytes, ratio: bytesWritten / expiredBytes, target: '= 0', note },
    { group: 'retention', metric: 'objects of expired hours left after the second run', value: left, unit: 'objects', target: '= 0', note },
    { group: 'retention', metric: 'objects in the lake before', value: before.size, unit: 'objects', note },
    { group: 'retention', metric: 'objects of kept hours changed (ETag) or deleted', value: changed + [...before.keys()].filter((key) => !expired(key) && !bucket.objects.has(key)).length, unit: 'objects', target: '= 0', note },
    { group: 'retention', metric: 'listings asked for by the two runs (one per prefix and organization with a retention)', value: listings, unit: 'listings', note },
    { group: 'retention', metric: 'time of the two runs, in-memory bucket', value: Math.round(elapsedMs), unit: 'ms', note },
  ];
}
