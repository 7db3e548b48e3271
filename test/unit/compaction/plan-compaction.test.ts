import { compactPending } from '../../../lambda/compaction/compact-pending.js';
import { manifestKey } from '../../../lambda/lake/keys/compacted-keys.js';
import { composePlanner, plannerConfigFromEnv } from '../../../lambda/compaction/compose.js';
import { type PlannerDeps, planCompaction } from '../../../lambda/compaction/plan-compaction.js';
import { InvalidSliceMessageError, type SliceMessage, parseSliceMessage, sliceGroupId } from '../../../lambda/compaction/slice-message.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import { quietTelemetry } from '../../../devkit/fakes/quiet-telemetry.js';
import { acceptedTrace, inlineRecord, traceContext } from '../../../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';

const NOW = new Date('2026-11-23T12:00:00Z');

/** A queue that keeps what it was sent. */
class SentMessages {
  readonly sent: SliceMessage[] = [];
  async send(messages: readonly SliceMessage[]): Promise<void> {
    this.sent.push(...messages);
  }
}

async function land(bucket: MemoryBucket, n: number, org: string, timestamp = '2026-11-22T10:15:00.000000Z'): Promise<void> {
  await landRecords({ store: bucket }, [inlineRecord(n, acceptedTrace({ timestamp }, 1), traceContext({ org_id: org }))]);
}

const deps = (bucket: MemoryBucket, queue: SentMessages, now = NOW): PlannerDeps => ({ store: bucket, queue, now: () => now });

describe('the compaction planner', () => {
  it('sends one message per pending slice, grouped by slice id, and skips hours that are still open', async () => {
    const bucket = new MemoryBucket();
    await land(bucket, 1, 'org-a');
    await land(bucket, 2, 'org-a');
    await land(bucket, 3, 'org-b');
    await land(bucket, 4, 'org-a', '2026-11-23T11:55:00.000000Z');
    const queue = new SentMessages();

    const plan = await planCompaction(deps(bucket, queue));

    expect(plan).toEqual({ slicesSeen: 3, open: 1, planned: { new: 2, uncovered: 0, cleanup: 0, 'unreadable-manifest': 0, erasure: 0 }, split: 0 });
    expect(queue.sent.map((m) => m.groupId)).toEqual(['org-a/2026-11-22/10', 'org-b/2026-11-22/10']);
    expect(queue.sent.map((m) => parseSliceMessage(m.body))).toEqual([
      { orgId: 'org-a', dt: '2026-11-22', hour: '10' },
      { orgId: 'org-b', dt: '2026-11-22', hour: '10' },
    ]);
    expect(JSON.parse(queue.sent[0]!.body)).toEqual({ v: 1, org_id: 'org-a', dt: '2026-11-22', hour: '10', reason: 'new', planned_at: NOW.toISOString() });
    for (const message of queue.sent) expect(message.deduplicationId).toMatch(/^[0-9a-f]{64}$/);
    expect(new Set(queue.sent.map((m) => m.deduplicationId)).size).toBe(2);
  });

  it('gives the same pending state the same deduplication id, and a new one once late data lands', async () => {
    const bucket = new MemoryBucket();
    await land(bucket, 1, 'org-a');
    const queue = new SentMessages();
    await planCompaction(deps(bucket, queue));
    await planCompaction(deps(bucket, queue, new Date(NOW.getTime() + 60_000)));
    await land(bucket, 2, 'org-a');
    await planCompaction(deps(bucket, queue));

    const [first, again, afterLateData] = queue.sent.map((m) => m.deduplicationId);
    expect(again).toBe(first);
    expect(afterLateData).not.toBe(first);
    expect(new Set(queue.sent.map((m) => m.groupId))).toEqual(new Set(['org-a/2026-11-22/10']));
  });

  it('sends nothing for a compacted slice, and plans it again for uncovered raw data, an overwritten raw object or an expired generation', async () => {
    const bucket = new MemoryBucket();
    await land(bucket, 1, 'org-a');
    await compactPending({ store: bucket, now: () => NOW });
    const queue = new SentMessages();
    expect((await planCompaction(deps(bucket, queue))).planned).toEqual({ new: 0, uncovered: 0, cleanup: 0, 'unreadable-manifest': 0, erasure: 0 });
    expect(queue.sent).toEqual([]);

    await land(bucket, 2, 'org-a');
    expect((await planCompaction(deps(bucket, queue))).planned.uncovered).toBe(1);
    await compactPending({ store: bucket, now: () => NOW });
    const [raw] = await bucket.list('traces/');
    bucket.objects.set(raw!.key, { ...bucket.objects.get(raw!.key)!, etag: '"rewritten"' });
    expect((await planCompaction(deps(bucket, queue))).planned.uncovered).toBe(1);
    await compactPending({ store: bucket, now: () => NOW });

    expect((await planCompaction(deps(bucket, queue))).planned).toEqual({ new: 0, uncovered: 0, cleanup: 0, 'unreadable-manifest': 0, erasure: 0 });
    const later = new Date(NOW.getTime() + 3 * 3600_000);
    expect((await planCompaction(deps(bucket, queue, later))).planned).toEqual({ new: 0, uncovered: 0, cleanup: 1, 'unreadable-manifest': 0, erasure: 0 });
  });

  it('plans a slice whose manifest cannot be read, so that its compaction fails and is reported', async () => {
    const bucket = new MemoryBucket();
    await land(bucket, 1, 'org-a');
    bucket.objects.set(manifestKey({ orgId: 'org-a', dt: '2026-11-22', hour: '10' }), { body: Buffer.from('not json'), etag: '"x"' });
    const queue = new SentMessages();

    expect((await planCompaction(deps(bucket, queue))).planned['unreadable-manifest']).toBe(1);
    expect(JSON.parse(queue.sent[0]!.body).reason).toBe('unreadable-manifest');
  });

  it('fails the scheduled invocation when the queue does not take the messages', async () => {
    const bucket = new MemoryBucket();
    await land(bucket, 1, 'org-a');
    const handler = composePlanner({ store: bucket, queue: { send: () => Promise.reject(new Error('queue unavailable')) }, ...quietTelemetry() });
    await expect(handler()).rejects.toThrow('queue unavailable');

    const queue = new SentMessages();
    const plan = await composePlanner({ store: bucket, queue, pending: { includeOpenHours: true }, ...quietTelemetry() })();
    expect(plan.planned.new).toBe(1);
    expect(queue.sent).toHaveLength(1);
  });
});

describe('slice messages', () => {
  it('use the slice id as group id when SQS accepts it, else a hash of it within 128 characters', () => {
    expect(sliceGroupId({ orgId: 'org-a', dt: '2026-11-22', hour: '10' })).toBe('org-a/2026-11-22/10');
    for (const orgId of ['o'.repeat(200), 'org with spaces', 'orgé']) {
      const id = sliceGroupId({ orgId, dt: '2026-11-22', hour: '10' });
      expect(id).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(id.length).toBeLessThanOrEqual(128);
    }
  });

  it.each([
    ['not JSON', 'nope'],
    ['another version', JSON.stringify({ v: 2, org_id: 'org-a', dt: '2026-11-22', hour: '10' })],
    ['a slash in the org id', JSON.stringify({ v: 1, org_id: 'a/b', dt: '2026-11-22', hour: '10' })],
    ['an hour out of range', JSON.stringify({ v: 1, org_id: 'org-a', dt: '2026-11-22', hour: '24' })],
    ['no date', JSON.stringify({ v: 1, org_id: 'org-a', hour: '10' })],
    ['null', 'null'],
  ])('are rejected when they hold %s', (_name, body) => {
    expect(() => parseSliceMessage(body)).toThrow(InvalidSliceMessageError);
  });
});

describe('the planner listing one organization at a time', () => {
  it('lists each organization under its own prefix and plans exactly what one whole listing plans', async () => {
    const bucket = new MemoryBucket();
    for (const [i, org] of ['org-a', 'org-b', 'org-ab', 'org-a', 'org-c'].entries()) await land(bucket, i + 1, org);
    await compactPending({ store: bucket, now: () => NOW });
    await land(bucket, 9, 'org-ab');
    const listed: string[] = [];
    const watched = Object.assign(Object.create(bucket) as MemoryBucket, { list: (prefix: string) => (listed.push(prefix), bucket.list(prefix)) });
    const whole = new SentMessages();
    const byOrganization = new SentMessages();

    const wholePlan = await planCompaction({ ...deps(bucket, whole), store: watched });
    const wholePrefixes = listed.splice(0);
    const organizations = { list: async () => ['org-a', 'org-ab', 'org-b', 'org-c'] };
    const orgPlan = await planCompaction({ ...deps(bucket, byOrganization), store: watched, organizations });

    expect(wholePrefixes).toEqual(['traces/', 'spans/']);
    expect(listed.sort()).toEqual(['org-a', 'org-ab', 'org-b', 'org-c'].flatMap((org) => [`spans/org_id=${org}/`, `traces/org_id=${org}/`]).sort());
    expect(orgPlan).toEqual(wholePlan);
    expect(orgPlan.planned.uncovered).toBe(1);
    expect(byOrganization.sent).toEqual(whole.sent);
  });

  it('has queued the organizations it looked at when a later one fails, and starts no new one after the failure', async () => {
    const bucket = new MemoryBucket();
    const orgs = ['org-a', 'org-b', 'org-c', 'org-d', 'org-e', 'org-f'];
    for (const [i, org] of orgs.entries()) await land(bucket, i + 1, org);
    const listed: string[] = [];
    const failing = Object.assign(Object.create(bucket) as MemoryBucket, {
      list: (prefix: string) => (listed.push(prefix), prefix.includes('org-a') ? Promise.reject(new Error('SlowDown')) : bucket.list(prefix)),
    });
    const queue = new SentMessages();

    await expect(planCompaction({ ...deps(bucket, queue), store: failing, organizations: { list: async () => orgs } })).rejects.toThrow('SlowDown');

    // org-b, org-c and org-d were in flight when org-a failed: they finish and are queued; org-e and org-f never start.
    expect(queue.sent.map((m) => m.groupId).sort()).toEqual(['org-b', 'org-c', 'org-d'].map((org) => `${org}/2026-11-22/10`));
    expect(listed.filter((prefix) => prefix.includes('org-e') || prefix.includes('org-f'))).toEqual([]);
  });

  it('is what the deployed planner does, and the deployed planner needs the queue URL', () => {
    expect(plannerConfigFromEnv({ DATA_BUCKET: 'data', COMPACTION_QUEUE_URL: 'https://sqs/q.fifo', TENANCY_TABLE: 'tenancy' })).toEqual({
      dataBucket: 'data',
      s3ForcePathStyle: false,
      tenancyTable: 'tenancy',
      queueUrl: 'https://sqs/q.fifo',
      listByOrganization: true,
    });
    expect(() => plannerConfigFromEnv({ DATA_BUCKET: 'data', TENANCY_TABLE: 'tenancy' })).toThrow('Missing required environment variable COMPACTION_QUEUE_URL');
    expect(() => plannerConfigFromEnv({ DATA_BUCKET: 'data', COMPACTION_QUEUE_URL: 'https://sqs/q.fifo' })).toThrow('Missing required environment variable TENANCY_TABLE');
  });
});
