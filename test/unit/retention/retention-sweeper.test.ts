import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { compactPending } from '../../../lambda/compaction/compact-pending.js';
import { compactQueuedSlices } from '../../../lambda/compaction/compact-queued-slices.js';
import { parseCompactionMessage, sliceGroupId } from '../../../lambda/compaction/slice-message.js';
import type { SliceMessage } from '../../../lambda/compaction/slice-message.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import { ENV } from '../../../lambda/shared/runtime/env-names.js';
import type { Organization } from '../../../lambda/shared/domain/tenancy.js';
import { INVALID_RETENTION_METRIC } from '../../../lambda/shared/service-constants.js';
import { RetentionSweepError } from '../../../lambda/retention/plan-retention.js';
import { composeRetentionSweeper, retentionConfigFromEnv } from '../../../lambda/retention/compose.js';
import { expiryMessage } from '../../../lambda/retention/expiry-message.js';
import { listedRetentionBucket } from '../../../lambda/retention/listed-retention-bucket.js';
import { S3RetentionBucket } from '../../../lambda/retention/s3-retention-bucket.js';
import { acceptedSpan, acceptedTrace, inlineRecord, traceContext } from '../../../devkit/builders/landing-builders.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';
import { quietTelemetry } from '../../../devkit/fakes/quiet-telemetry.js';

const NOW = new Date('2026-11-28T12:00:00.000Z');
const SLICE = { orgId: 'acme', dt: '2026-11-20', hour: '07' };

async function lakeWithOldHour(): Promise<MemoryBucket> {
  const bucket = new MemoryBucket();
  const at = '2026-11-20T07:10:00.000000Z';
  await landRecords({ store: bucket }, [inlineRecord(1, acceptedTrace({ timestamp: at, spans: [acceptedSpan({ timestamp: at })] }), traceContext({ org_id: 'acme' }))]);
  await compactPending({ store: bucket, now: () => NOW });
  return bucket;
}

describe('the deployed retention sweep', () => {
  it('queues each expired hour in that hour\'s compaction message group, and the worker deletes it', async () => {
    const bucket = await lakeWithOldHour();
    const sent: SliceMessage[] = [];
    const sweep = composeRetentionSweeper({
      bucket: listedRetentionBucket(bucket),
      tenancy: {
        listOrganizations: async () => [{ orgId: 'acme', plan: 'team', overrides: {}, planStatus: 'active', billingStatus: 'ok', createdAt: '', updatedAt: '' }],
        listPlans: async () => [{ name: 'team', quotas: { minute: null, hour: null, day: null, month: null }, retentionDays: 7, createdAt: '', updatedAt: '' }],
      },
      queue: { send: async (messages) => void sent.push(...messages) },
      now: () => NOW,
      ...quietTelemetry('retention'),
    });

    const plan = await sweep();
    expect(plan.organizations).toEqual([expect.objectContaining({ org_id: 'acme', retention: { days: 7, source: 'plan' }, hoursExpired: 1 })]);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.groupId).toBe(sliceGroupId(SLICE));
    expect(parseCompactionMessage(sent[0]!.body)).toEqual({ kind: 'expire', slice: SLICE, deleteCompacted: false });
    // Nothing deleted by the sweep itself: the worker does it, in the hour's group.
    expect(bucket.keys('manifests/')).toHaveLength(1);

    const outcome = await compactQueuedSlices({ store: bucket }, [{ messageId: 'm1', body: sent[0]!.body }]);
    expect(outcome).toMatchObject({ failedMessageIds: [], expired: [expect.objectContaining({ slice: SLICE, deleteCompacted: false, objectsDeleted: 3 })] });
    expect(bucket.keys('manifests/')).toEqual([]);
    expect(bucket.keys('traces/')).toEqual([]);
    expect(bucket.keys('compacted/')).toHaveLength(2);

    const second = await compactQueuedSlices({ store: bucket }, [{ messageId: 'm2', body: expiryMessage({ slice: SLICE, deleteCompacted: true }, NOW).body }]);
    expect(second.expired).toEqual([expect.objectContaining({ deleteCompacted: true, objectsDeleted: 2 })]);
    expect(bucket.keys()).toEqual([]);
  });

  it('counts the organizations it left alone for an invalid stored retention, also in a run that fails for another', async () => {
    const bucket = await lakeWithOldHour();
    const telemetry = quietTelemetry('retention');
    const added = jest.spyOn(telemetry.metrics, 'addMetric');
    const org = (orgId: string, extra: Partial<Organization> = {}): Organization => ({ orgId, plan: 'team', overrides: {}, planStatus: 'active', billingStatus: 'ok', createdAt: '', updatedAt: '', ...extra });
    const listed = listedRetentionBucket(bucket);
    const sweep = (failing: boolean) =>
      composeRetentionSweeper({
        bucket: failing ? { ...listed, listBefore: (prefix, bound) => (prefix.includes('org_id=acme/') ? Promise.reject(new Error('SlowDown')) : listed.listBefore(prefix, bound)) } : listed,
        tenancy: {
          listOrganizations: async () => [org('acme'), org('zero', { invalidRetention: '{"N":"0"}' })],
          listPlans: async () => [{ name: 'team', quotas: { minute: null, hour: null, day: null, month: null }, retentionDays: 7, createdAt: '', updatedAt: '' }],
        },
        queue: { send: async () => undefined },
        now: () => NOW,
        ...telemetry,
      })();
    const invalidCounts = () => added.mock.calls.filter(([name]) => name === INVALID_RETENTION_METRIC).map(([, unit, value]) => [unit, value]);

    await expect(sweep(false)).resolves.toMatchObject({ skipped: [{ org_id: 'zero', item: 'organization', stored_retention_days: '{"N":"0"}' }] });
    expect(invalidCounts()).toEqual([[MetricUnit.Count, 1]]);
    await expect(sweep(true)).rejects.toThrow(RetentionSweepError);
    expect(invalidCounts()).toEqual([[MetricUnit.Count, 1], [MetricUnit.Count, 1]]);
  });

  it('deduplicates a doubled run within the minute, and not the next hourly run', () => {
    const hour = { slice: SLICE, deleteCompacted: false };
    expect(expiryMessage(hour, NOW).deduplicationId).toBe(expiryMessage(hour, new Date(NOW.getTime() + 30_000)).deduplicationId);
    expect(expiryMessage(hour, NOW).deduplicationId).not.toBe(expiryMessage(hour, new Date(NOW.getTime() + 60 * 60_000)).deduplicationId);
    expect(expiryMessage(hour, NOW).deduplicationId).not.toBe(expiryMessage({ ...hour, deleteCompacted: true }, NOW).deduplicationId);
  });

  it('reads the ceiling from its environment once, and refuses a bad one at cold start', () => {
    const env = { [ENV.dataBucket]: 'b', [ENV.tenancyTable]: 't', [ENV.compactionQueueUrl]: 'q' };
    expect(retentionConfigFromEnv(env)).toEqual({ dataBucket: 'b', tenancyTable: 't', queueUrl: 'q' });
    expect(retentionConfigFromEnv({ ...env, [ENV.dataRetentionDays]: '90' })).toMatchObject({ stackCeilingDays: 90 });
    expect(() => retentionConfigFromEnv({ ...env, [ENV.dataRetentionDays]: 'forever' })).toThrow("DATA_RETENTION_DAYS must be a whole number of days, not 'forever'");
    expect(() => retentionConfigFromEnv({ [ENV.dataBucket]: 'b' })).toThrow('Missing required environment variable TENANCY_TABLE');
  });

  it.each(['0', '-1', '1.5', '36501'])('refuses a ceiling of %s at cold start, which would sweep every ended hour of every organization (or more)', (ceiling) => {
    // lib/config.ts refuses these at synth; an environment edited by hand must not reach the sweep either.
    const env = { [ENV.dataBucket]: 'b', [ENV.tenancyTable]: 't', [ENV.compactionQueueUrl]: 'q', [ENV.dataRetentionDays]: ceiling };
    expect(() => retentionConfigFromEnv(env)).toThrow(`DATA_RETENTION_DAYS must be a whole number of days, not '${ceiling}'`);
  });
});

describe('S3RetentionBucket', () => {
  const s3 = mockClient(S3Client);
  beforeEach(() => s3.reset());

  it('lists a prefix in key order and stops at the bound without reading further pages', async () => {
    s3.on(ListObjectsV2Command, { ContinuationToken: undefined }).resolves({ Contents: [{ Key: 'a/1', ETag: 'e1', Size: 5 }, { Key: 'a/2', ETag: 'e2', Size: 6 }], IsTruncated: true, NextContinuationToken: 'next' });
    s3.on(ListObjectsV2Command, { ContinuationToken: 'next' }).resolves({ Contents: [{ Key: 'a/3', ETag: 'e3', Size: 7 }, { Key: 'a/4' }], IsTruncated: true, NextContinuationToken: 'more' });
    const bucket = new S3RetentionBucket(new S3Client({}), 'data');
    await expect(bucket.listBefore('a/', 'a/4')).resolves.toEqual([
      { key: 'a/1', etag: 'e1', size: 5 },
      { key: 'a/2', etag: 'e2', size: 6 },
      { key: 'a/3', etag: 'e3', size: 7 },
    ]);
    expect(s3).toHaveReceivedCommandTimes(ListObjectsV2Command, 2);
    expect(s3).toHaveReceivedCommandWith(ListObjectsV2Command, { Bucket: 'data', Prefix: 'a/' });
  });
});
