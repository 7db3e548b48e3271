import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { sliceOfManifestKey } from '../../lambda/lake/keys/compacted-keys.js';
import { parseManifest } from '../../lambda/lake/manifest.js';
import { exactlyOnceKeys } from '../../lambda/lake/read-plan.js';
import { landRecords } from '../../lambda/landing/land-records.js';
import { S3LandingStore } from '../../lambda/landing/s3-landing-store.js';
import { compactLocal } from '../../devkit/local-stack/local-compaction.js';
import { localPaths } from '../../devkit/local-stack/local-state.js';
import { acceptedSpan, acceptedTrace, inlineRecord, traceContext } from '../../devkit/builders/landing-builders.js';
import { createOrganization, createPlan, showOrganization } from '../../scripts/admin/commands.js';
import { useEngineSuite } from '../support/engine-suite.js';

const BUCKET = 'data';
const TABLES = { tenancy: 'tenancy', rate: 'rate' };
const HOUR = 60 * 60 * 1000;
const NOW = new Date('2026-11-28T12:30:00.000Z');

/**
 * Retention's proof on the engines `npm start` runs (DynamoDB Local for the tenancy table, s3rver for the bucket),
 * through `npm start`'s own run (`compactLocal`: the sweep, then compaction, under the compaction lock), its clock
 * driven: every object of an hour past retention is gone, nothing was written, and the hours within it are
 * untouched, object by object (key and ETag) and row by row through the exactly-once view.
 */
describe('retention against DynamoDB Local and s3rver', () => {
  const suite = useEngineSuite({ tables: TABLES, bucket: BUCKET, duckdb: true });

  async function objects(): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    let ContinuationToken: string | undefined;
    do {
      const page = await suite.s3.send(new ListObjectsV2Command({ Bucket: BUCKET, ContinuationToken }));
      // The ETag and the modification time: a rewrite of the same bytes keeps the ETag but not the time.
      for (const item of page.Contents ?? []) found.set(item.Key!, `${item.ETag!} ${item.LastModified!.toISOString()}`);
      ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (ContinuationToken);
    return found;
  }

  /** Trace ids per org/dt/hour, as the exactly-once `traces` view reads them (manifests first, then raw), by DuckDB. */
  async function view(): Promise<Map<string, string[]>> {
    const { dir, keys } = await suite.downloadBucket();
    const manifests = await Promise.all(
      keys.filter((key) => key.startsWith('manifests/')).map(async (key) => {
        const body = await (await suite.s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))).Body!.transformToByteArray();
        return parseManifest(body, sliceOfManifestKey(key)!);
      }),
    );
    const files = exactlyOnceKeys('traces', manifests, keys.filter((key) => key.startsWith('traces/')));
    const byHour = new Map<string, string[]>();
    if (files.length === 0) return byHour;
    const rows = await suite.query(`SELECT filename, trace_id FROM read_parquet([${files.map((key) => `'${path.join(dir, key)}'`).join(', ')}], filename = true) ORDER BY trace_id`);
    for (const row of rows) {
      const [, org, dt, hour] = /org_id=([^/]+)\/dt=([^/]+)\/hour=(\d\d)\//.exec(row.filename as string)!;
      const id = `${org}/${dt}/${hour}`;
      byHour.set(id, [...(byHour.get(id) ?? []), row.trace_id as string]);
    }
    return byHour;
  }

  it('deletes every object of the hours past an organization\'s retention with 0 bytes written, and leaves every other hour as it was', async () => {
    const admin = { store: suite.tenancy, now: () => NOW };
    await createPlan(admin, 'team', { minute: null, hour: null, day: null, month: null }, { retentionDays: 2 });
    await createOrganization(admin, 'short', { plan: 'team' });
    await createOrganization(admin, 'forever', { plan: 'team', retentionDays: null });
    await expect(showOrganization(admin, 'short')).resolves.toMatchObject({ retention: { days: 2, source: 'plan' } });

    // 72 hours of both organizations, seeded as landed objects (timestamps are only accepted within ±24 h of
    // receipt, so an old lake is landed directly), then compacted; late data on the oldest hours stays raw.
    const store = new S3LandingStore(suite.s3, BUCKET);
    let sequence = 0;
    const first = Date.UTC(2026, 10, 25, 12);
    for (let h = 0; h < 72; h++) {
      const hour = new Date(first + h * HOUR);
      const at = new Date(hour.getTime() + 60_000).toISOString().replace('Z', '000Z');
      for (const orgId of ['short', 'forever']) {
        const traces = [0, 1].map(() => acceptedTrace({ timestamp: at, spans: [acceptedSpan({ timestamp: at })] }));
        await landRecords({ store }, traces.map((trace) => inlineRecord(++sequence, trace, traceContext({ org_id: orgId, received_at: hour.toISOString() }))));
      }
    }
    const paths = localPaths(mkdtempSync(path.join(suite.scratch, 'local-')));
    const endpoints = { s3: suite.endpoints.s3!, bucket: BUCKET, dynamodb: suite.endpoints.dynamodb!, tables: TABLES };
    await compactLocal({ s3: endpoints.s3, bucket: BUCKET }, paths, { includeOpenHours: true, deps: { now: () => NOW } });
    const late = acceptedTrace({ timestamp: '2026-11-25T12:05:00.000000Z', spans: [] });
    await landRecords({ store }, [inlineRecord(++sequence, late, traceContext({ org_id: 'short', received_at: '2026-11-25T12:05:00.000Z' }))]);

    const before = await objects();
    const viewBefore = await view();
    // Retention 2 days at NOW: every hour that ended by 2026-11-26T12:30 is past it, 24 of short's 72 hours.
    const expired = (id: string) => id.startsWith('short/') && Date.parse(`${id.slice(6, 16)}T${id.slice(17)}:00:00Z`) + HOUR <= NOW.getTime() - 2 * 24 * HOUR;
    expect([...viewBefore.keys()].filter(expired)).toHaveLength(24);

    const firstRun = await compactLocal(endpoints, paths, { deps: { now: () => NOW } });
    // Past the readers' grace, the compacted objects of those hours go too.
    const secondRun = await compactLocal(endpoints, paths, { deps: { now: () => new Date(NOW.getTime() + 2 * HOUR) } });
    expect(firstRun.retention?.deleted.filter((hour) => !hour.deleteCompacted)).toHaveLength(24);
    // Two hours on, two more of short's hours passed retention: their raw objects and manifests went in the second run.
    expect(secondRun.retention?.deleted.filter((hour) => hour.deleteCompacted)).toHaveLength(24);
    expect(firstRun.compacted).toEqual([]);
    expect(secondRun.compacted).toEqual([]);

    const after = await objects();
    const viewAfter = await view();
    const expiredAt = (id: string, now: Date) => id.startsWith('short/') && Date.parse(`${id.slice(6, 16)}T${id.slice(17)}:00:00Z`) + HOUR <= now.getTime() - 2 * 24 * HOUR;
    const hourOfKey = (key: string) => /org_id=([^/]+)\/dt=([^/]+)\/hour=(\d\d)\//.exec(key);
    const keyExpired = (key: string) => {
      const match = hourOfKey(key);
      return match !== null && expiredAt(`${match[1]}/${match[2]}/${match[3]}`, NOW);
    };
    // No object of an hour past retention remains.
    expect([...after.keys()].filter(keyExpired)).toEqual([]);
    // Nothing was written: every object left is one that was there before, with the same ETag and time.
    for (const [key, etag] of after) expect({ key, etag }).toEqual({ key, etag: before.get(key) });
    // The hours within retention (and all of the organization that keeps its data) are untouched, row by row.
    const keptBefore = [...viewBefore].filter(([id]) => !expiredAt(id, new Date(NOW.getTime() + 2 * HOUR)));
    const keptAfter = [...viewAfter].filter(([id]) => !expiredAt(id, new Date(NOW.getTime() + 2 * HOUR)));
    expect(keptAfter).toEqual(keptBefore);
    expect([...viewAfter.keys()].filter((id) => id.startsWith('forever/'))).toHaveLength(72);
    expect([...viewAfter.keys()].filter(expired)).toEqual([]);
    expect([...before.keys()].filter(keyExpired).length).toBeGreaterThan(24 * 4);

    // A sweep that fails (here: no tenancy table) is reported and does not hold compaction up.
    await landRecords({ store }, [inlineRecord(++sequence, acceptedTrace({ timestamp: '2026-11-28T11:05:00.000000Z', spans: [] }), traceContext({ org_id: 'forever', received_at: '2026-11-28T11:05:00.000Z' }))]);
    const broken = await compactLocal({ ...endpoints, tables: { tenancy: 'missing', rate: 'missing' } }, paths, { includeOpenHours: true, deps: { now: () => NOW } });
    expect(broken.retentionFailure).toMatch(/non-existent table|not found/i);
    expect(broken.compacted.map((c) => `${c.slice.orgId}/${c.slice.dt}/${c.slice.hour}`)).toEqual(['forever/2026-11-28/11']);
  });
});
