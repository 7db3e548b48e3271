import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { manifestKey } from '../../lambda/lake/keys/compacted-keys.js';
import { composePlanner, composeWorker } from '../../lambda/compaction/compose.js';
import { parseManifest } from '../../lambda/lake/manifest.js';
import { S3LakeStore } from '../../lambda/lake/s3-lake-store.js';
import type { SliceMessage } from '../../lambda/compaction/slice-message.js';
import { landRecords } from '../../lambda/landing/land-records.js';
import { S3LandingStore } from '../../lambda/landing/s3-landing-store.js';
import { type Engine, startS3rver } from '../../devkit/engines/engines.js';
import { createBucket, localClientConfig } from '../../devkit/engines/provision.js';
import { queryLanded } from '../../scripts/local/query.js';
import { quietTelemetry } from '../../devkit/fakes/quiet-telemetry.js';
import { acceptedTrace, inlineRecord, traceContext } from '../../devkit/builders/landing-builders.js';

/**
 * The deployed compaction path on s3rver, through the composition roots of both functions: the planner lists
 * and reads manifests through the S3 adapter and hands its messages to a queue; the worker gets them as an SQS
 * event and compacts each slice from its own listing. (SQS itself is not emulated: its semantics are modelled in
 * test/unit/compaction/fan-out.test.ts.)
 */
describe('compaction planner and worker against s3rver', () => {
  const bucket = 'data';
  const s3Dir = mkdtempSync(path.join(tmpdir(), 'compaction-fan-out-it-'));
  let engine: Engine;
  let s3: S3Client;

  beforeAll(async () => {
    engine = await startS3rver({ dataDir: s3Dir });
    s3 = new S3Client(localClientConfig(engine.endpoint));
    await createBucket(s3, bucket);
  });

  afterAll(async () => {
    s3?.destroy();
    await engine?.stop();
    rmSync(s3Dir, { recursive: true, force: true });
  });

  it('plans every closed slice once, and the worker leaves each trace and span once', async () => {
    const store = new S3LandingStore(s3, bucket);
    const traces = Array.from({ length: 12 }, (_, i) => ({ trace: acceptedTrace({}, 1 + (i % 3)), org: i % 3 === 0 ? 'org-b' : 'org-a' }));
    const records = traces.map(({ trace, org }, i) => inlineRecord(i + 1, trace, traceContext({ org_id: org, request_id: `req-${i}` })));
    await landRecords({ store }, records.slice(0, 8));
    await landRecords({ store }, records.slice(4));
    const sent: SliceMessage[] = [];
    const planner = composePlanner({ dataBucket: bucket, s3, queue: { send: async (messages) => void sent.push(...messages) }, ...quietTelemetry() });
    const worker = composeWorker({ dataBucket: bucket, s3, ...quietTelemetry() });

    const plan = await planner();

    expect(plan.planned.new).toBe(2);
    expect(sent.map((m) => m.groupId).sort()).toEqual(['org-a/2026-11-22/10', 'org-b/2026-11-22/10']);
    const event: SQSEvent = { Records: sent.map((m, i) => ({ messageId: `m${i}`, body: m.body }) as SQSRecord) };
    for (const record of event.Records) expect(await worker({ Records: [record] })).toEqual({ batchItemFailures: [] });

    const data = { s3Directory: s3Dir, bucket };
    const [counts] = await queryLanded('SELECT count(*)::INTEGER AS n, count(DISTINCT trace_id)::INTEGER AS ids FROM traces', data);
    expect(counts!.rows).toEqual([{ n: 12, ids: 12 }]);
    const spans = traces.reduce((sum, { trace }) => sum + trace.spans.length, 0);
    expect((await queryLanded('SELECT count(*)::INTEGER AS n FROM spans', data))[0]!.rows).toEqual([{ n: spans }]);
    sent.length = 0;
    expect((await planner()).planned).toEqual({ new: 0, uncovered: 0, cleanup: 0, 'unreadable-manifest': 0, erasure: 0 });
    expect(sent).toEqual([]);
  });
  it('splits an hour past the part-worker limit: the switch waits for its parts, then each trace and span is once in the views', async () => {
    const store = new S3LandingStore(s3, bucket);
    const slice = { orgId: 'org-split', dt: '2026-11-22', hour: '10' };
    const traces = Array.from({ length: 300 }, () => acceptedTrace({}, 4));
    const context = (request: string, received_at?: string) => traceContext({ org_id: slice.orgId, request_id: request, ...(received_at ? { received_at } : {}) });
    // A large batch (its group lands hash-ordered), resends of some of its traces, newer versions of others.
    await landRecords({ store }, traces.map((t, i) => inlineRecord(1000 + i, t, context('req-1'))));
    await landRecords({ store }, traces.slice(0, 20).map((t, i) => inlineRecord(2000 + i, t, context('req-2'))));
    await landRecords({ store }, traces.slice(20, 30).map((t, i) => inlineRecord(3000 + i, { ...t, spans: t.spans.slice(0, 2) }, context('req-3', '2026-11-22T10:30:00.000000Z'))));
    const raw = new S3LakeStore(s3, bucket);
    const rawBytes = (await raw.list('traces/org_id=org-split/')).concat(await raw.list('spans/org_id=org-split/')).reduce((sum, o) => sum + o.size, 0);
    const sent: SliceMessage[] = [];
    const planner = composePlanner({ dataBucket: bucket, s3, partWorkerBytes: Math.ceil(rawBytes / 3), queue: { send: async (messages) => void sent.push(...messages) }, ...quietTelemetry() });
    const worker = composeWorker({ dataBucket: bucket, s3, ...quietTelemetry() });
    const deliver = (message: SliceMessage, messageId: string) => worker({ Records: [{ messageId, body: message.body, attributes: { ApproximateReceiveCount: '1' } } as SQSRecord] });

    const plan = await planner();

    expect(plan.split).toBe(1);
    const mine = sent.filter((m) => m.groupId.startsWith('org-split/'));
    expect(mine.map((m) => m.groupId)).toEqual([0, 1, 2, 3].map((w) => `org-split/2026-11-22/10#part-${w}-of-4`).concat('org-split/2026-11-22/10'));
    const switchMessage = mine.at(-1)!;
    expect(await deliver(switchMessage, 'early')).toEqual({ batchItemFailures: [{ itemIdentifier: 'early' }] });
    expect(await raw.get(manifestKey(slice))).toBeUndefined();
    for (const [i, part] of mine.slice(0, -1).entries()) expect(await deliver(part, `p${i}`)).toEqual({ batchItemFailures: [] });
    expect(await deliver(switchMessage, 'switch')).toEqual({ batchItemFailures: [] });

    const manifest = parseManifest((await raw.get(manifestKey(slice)))!, slice);
    expect(manifest.traces.files).toHaveLength(4);
    expect(manifest.spans.files).toHaveLength(4);
    const data = { s3Directory: s3Dir, bucket };
    const where = `WHERE org_id = '${slice.orgId}'`;
    expect((await queryLanded(`SELECT count(*)::INTEGER AS n, count(DISTINCT trace_id)::INTEGER AS ids FROM traces ${where}`, data))[0]!.rows).toEqual([{ n: 300, ids: 300 }]);
    expect((await queryLanded(`SELECT count(*)::INTEGER AS n, count(DISTINCT (trace_id, span_id))::INTEGER AS ids FROM spans ${where}`, data))[0]!.rows).toEqual([{ n: 1200, ids: 1200 }]);
    // The newer versions won: their received_at, in every one of their traces' rows.
    expect((await queryLanded(`SELECT count(*)::INTEGER AS n FROM traces ${where} AND received_at = TIMESTAMP '2026-11-22 10:30:00'`, data))[0]!.rows).toEqual([{ n: 10 }]);
    expect(await raw.list('compacted/plans/org_id=org-split/')).toEqual([]);
  });
});
