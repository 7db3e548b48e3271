import { compactPending } from '../../lambda/compaction/compact-pending.js';
import { S3LakeStore } from '../../lambda/lake/s3-lake-store.js';
import { landRecords } from '../../lambda/landing/land-records.js';
import { S3LandingStore } from '../../lambda/landing/s3-landing-store.js';
import { expireHour } from '../../lambda/lake/lifecycle/expire-hour.js';
import { acceptedSpan, acceptedTrace, inlineRecord, traceContext } from '../../devkit/builders/landing-builders.js';
import { type LandedData, queryLanded } from '../../scripts/local/query.js';
import { useEngineSuite } from '../support/engine-suite.js';

const BUCKET = 'data';
const HOURS = 32;
const HOUR_MS = 60 * 60 * 1000;
const FIRST_HOUR_MS = Date.UTC(2026, 10, 20, 0);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `npm run query` against s3rver's directory while the sweep's deletion (expireHour's first two steps, through the S3
 * adapter) removes hour after hour: every query answers, and the hour kept is whole in each answer. Each hour is
 * deleted a few milliseconds after a query started, so that each deletion falls inside some query whatever the load.
 */
describe('npm run query during a retention sweep, on s3rver', () => {
  const suite = useEngineSuite({ bucket: BUCKET });

  it('answers every query run while the sweep deletes 32 hours: 0 of N fail', async () => {
    const landing = new S3LandingStore(suite.s3, BUCKET);
    const store = new S3LakeStore(suite.s3, BUCKET);
    let sequence = 0;
    const land = async (orgId: string, hourMs: number, receivedAtMs: number) => {
      const timestamp = new Date(hourMs + 60_000).toISOString().replace('Z', '000Z');
      const traces = [0, 1].map(() => acceptedTrace({ timestamp, spans: [acceptedSpan({ timestamp })] }));
      await landRecords({ store: landing }, traces.map((trace) => inlineRecord(++sequence, trace, traceContext({ org_id: orgId, received_at: new Date(receivedAtMs).toISOString() }))));
    };
    for (let h = 0; h < HOURS; h++) await land('gone', FIRST_HOUR_MS + h * HOUR_MS, FIRST_HOUR_MS + h * HOUR_MS);
    await land('kept', FIRST_HOUR_MS, FIRST_HOUR_MS);
    await compactPending({ store, now: () => new Date(FIRST_HOUR_MS + (HOURS + 1) * HOUR_MS) }, { includeOpenHours: true });
    // Late data of each hour after its compaction: raw objects the manifest does not cover, read from raw.
    for (let h = 0; h < HOURS; h++) await land('gone', FIRST_HOUR_MS + h * HOUR_MS, FIRST_HOUR_MS + (HOURS + 2) * HOUR_MS);

    const data: LandedData = { s3Directory: suite.s3Directory, bucket: BUCKET };
    const sql = "SELECT org_id, count(*)::INTEGER AS n FROM traces GROUP BY org_id ORDER BY org_id; SELECT count(*)::INTEGER AS n FROM spans WHERE org_id = 'kept'";
    const [before] = await queryLanded(sql, data);
    expect(before!.rows).toEqual([{ org_id: 'gone', n: 4 * HOURS }, { org_id: 'kept', n: 2 }]);

    let sweeping = true;
    let queries = 0;
    const sweep = (async () => {
      try {
        for (let h = 0; h < HOURS; h++) {
          const started = queries;
          while (queries === started) await sleep(2);
          await sleep((h % 5) * 5);
          const hour = new Date(FIRST_HOUR_MS + h * HOUR_MS).toISOString();
          await expireHour(store, { slice: { orgId: 'gone', dt: hour.slice(0, 10), hour: hour.slice(11, 13) }, deleteCompacted: false });
        }
      } finally {
        sweeping = false;
      }
    })();
    const failures: string[] = [];
    while (sweeping) {
      queries++;
      try {
        const [traces, spans] = await queryLanded(sql, data);
        expect(traces!.rows.find((row) => row.org_id === 'kept')).toEqual({ org_id: 'kept', n: 2 });
        expect(spans!.rows).toEqual([{ n: 2 }]);
      } catch (error) {
        failures.push((error as Error).message.split('\n')[0]!);
      }
    }
    await sweep;
    // The hours' compacted objects wait for the readers' grace; no manifest names them any more.
    expect((await queryLanded(sql, data))[0]!.rows).toEqual([{ org_id: 'kept', n: 2 }]);
    expect(queries).toBeGreaterThanOrEqual(HOURS);
    expect({ failed: failures.length, of: queries, failures }).toEqual({ failed: 0, of: queries, failures: [] });
  });
});
