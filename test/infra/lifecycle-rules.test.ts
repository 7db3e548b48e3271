import { DEFAULT_SETTLE_MS } from '../../lambda/compaction/compact-pending.js';
import { READERS_GRACE_MS } from '../../lambda/lake/readers-grace.js';
import { type Slice, compactedObjectKey, manifestKey } from '../../lambda/lake/keys/compacted-keys.js';
import type { DatasetName } from '../../lambda/datasets/registry.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_CONFIG, type TraceIngestConfig } from '../../lib/config.js';
import { compactedExpiryMarginDays } from '../../lib/constructs/landing.js';
import { type TemplateLifecycleRule, eligibleAtMs, expiresAtMs } from '../../devkit/s3/lifecycle-model.js';
import { PROJECT_ROOT, synthStack } from './support/synth-stack.js';

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;
const DATASETS: readonly DatasetName[] = ['traces', 'spans'];

/** What one manifest version names: each dataset's compacted object and when it was written. */
interface ManifestVersion {
  writtenAtMs: number;
  names: { key: string; createdAtMs: number }[];
}

/** How the synthesized stack's compaction runs: its planner period and its worker's longest run. */
interface CompactionTiming {
  scheduleMs: number;
  workerMs: number;
  /** A compaction outage before late data is compacted (0, or the day the raw retention allows for). */
  outageMs: number;
}

/**
 * An hour's manifest versions while lifecycle alone deletes (the sweep down, or an organization the tenancy table does
 * not hold): the first compaction once the hour settles, then per late raw object (landed at `lateLandings`, of one
 * dataset) a compaction that rewrites that dataset and carries the other over unrewritten, and the clean-up that PUTs
 * the manifest again once the replaced generation's grace has passed. A manifest lifecycle has expired is gone: the
 * next compaction starts from generation 1 and rewrites both datasets.
 */
function manifestTimeline(rules: readonly TemplateLifecycleRule[], slice: Slice, hourEndMs: number, lateLandings: readonly { dataset: DatasetName; landedAtMs: number }[], timing: CompactionTiming): ManifestVersion[] {
  const versions: ManifestVersion[] = [];
  const objects = new Map<DatasetName, { key: string; createdAtMs: number }>();
  let generation = 0;
  const alive = (atMs: number) => {
    const current = versions.at(-1);
    return current !== undefined && atMs < expiresAtMs(rules, manifestKey(slice), current.writtenAtMs)!;
  };
  const compact = (atMs: number, rewritten: readonly DatasetName[]) => {
    if (!alive(atMs)) {
      generation = 0;
      rewritten = DATASETS;
    }
    generation++;
    for (const dataset of rewritten) objects.set(dataset, { key: compactedObjectKey(dataset, slice, generation), createdAtMs: atMs });
    versions.push({ writtenAtMs: atMs, names: DATASETS.map((dataset) => objects.get(dataset)!) });
  };
  const cleanUp = (atMs: number) => {
    if (alive(atMs)) versions.push({ writtenAtMs: atMs, names: versions.at(-1)!.names });
  };
  compact(hourEndMs + DEFAULT_SETTLE_MS, DATASETS);
  for (const { dataset, landedAtMs } of lateLandings) {
    const compactedAtMs = landedAtMs + timing.outageMs + timing.scheduleMs + timing.workerMs;
    compact(compactedAtMs, [dataset]);
    cleanUp(compactedAtMs + READERS_GRACE_MS + timing.scheduleMs + timing.workerMs);
  }
  return versions;
}

interface Checked {
  pairs: number;
  /** The most a named object was older than its manifest version. */
  oldestCarriedOverMs: number;
  /** The least time from a manifest version's end to a named object's expiry. */
  leastMarginMs: number;
}

/**
 * Every object each version names against the version's end: overwritten by the next (readers already in flight
 * keep reading it for at most the readers' grace), or expired by lifecycle itself.
 */
function checkTimeline(rules: readonly TemplateLifecycleRule[], slice: Slice, versions: readonly ManifestVersion[], checked: Checked): void {
  versions.forEach((version, index) => {
    const expiredAtMs = expiresAtMs(rules, manifestKey(slice), version.writtenAtMs)!;
    const endedAtMs = Math.min(expiredAtMs, versions[index + 1]?.writtenAtMs ?? Infinity);
    for (const object of version.names) {
      const objectExpiresAtMs = expiresAtMs(rules, object.key, object.createdAtMs);
      if (objectExpiresAtMs === undefined) throw new Error(`no rule expires ${object.key}: the ceiling would not apply to it`);
      checked.pairs++;
      checked.oldestCarriedOverMs = Math.max(checked.oldestCarriedOverMs, version.writtenAtMs - object.createdAtMs);
      checked.leastMarginMs = Math.min(checked.leastMarginMs, objectExpiresAtMs - endedAtMs);
      if (objectExpiresAtMs - endedAtMs < DAY_MS) {
        throw new Error(`${object.key} (written ${new Date(object.createdAtMs).toISOString()}) is expired at ${new Date(objectExpiresAtMs).toISOString()}, under a day after the manifest written ${new Date(version.writtenAtMs).toISOString()} that names it ended at ${new Date(endedAtMs).toISOString()}`);
      }
    }
  });
}

describe('lifecycle rules of the data bucket, evaluated as S3 does', () => {
  it('makes an object eligible at the midnight UTC after its creation plus the days (AWS\'s example: 1/15/2014 10:30 + 3 days → 1/19/2014 00:00)', () => {
    expect(new Date(eligibleAtMs(Date.parse('2014-01-15T10:30:00Z'), 3)).toISOString()).toBe('2014-01-19T00:00:00.000Z');
    expect(new Date(eligibleAtMs(Date.parse('2014-01-15T00:00:00Z'), 1)).toISOString()).toBe('2014-01-17T00:00:00.000Z');
    const rules: TemplateLifecycleRule[] = [
      { Status: 'Enabled', Prefix: 'a/', ExpirationInDays: 5 },
      { Status: 'Enabled', Prefix: 'a/b/', ExpirationInDays: 2 },
      { Status: 'Disabled', Prefix: 'a/b/', ExpirationInDays: 1 },
      { Status: 'Enabled' },
    ];
    const created = Date.parse('2026-01-01T12:00:00Z');
    expect(new Date(expiresAtMs(rules, 'a/b/c', created)!).toISOString()).toBe('2026-01-04T00:00:00.000Z');
    expect(new Date(expiresAtMs(rules, 'a/c', created)!).toISOString()).toBe('2026-01-07T00:00:00.000Z');
    expect(expiresAtMs(rules, 'b/c', created)).toBeUndefined();
  });

  it('docs/deploy.md and docs/operations.md state the days compacted/ waits past manifests/', () => {
    const doc = (name: string) => readFileSync(path.join(PROJECT_ROOT, 'docs', name), 'utf8').replace(/\s+/g, ' ');
    expect(doc('deploy.md')).toContain(`\`compacted/\` ${compactedExpiryMarginDays(DEFAULT_CONFIG.streamRetentionHours)} days later (with the default 24-hour stream`);
    expect(doc('operations.md')).toContain(`${compactedExpiryMarginDays(24)} days with the default 24-hour stream, ${compactedExpiryMarginDays(168)} with a 7-day one`);
  });

  describe.each([
    ['a 1-day ceiling', { dataRetentionDays: 1 }],
    ['a 30-day ceiling', { dataRetentionDays: 30 }],
    ['a 7-day ceiling and a 7-day stream', { dataRetentionDays: 7, streamRetentionHours: 168 }],
  ])('with %s', (_name, overrides: Partial<TraceIngestConfig>) => {
    const config = { ...DEFAULT_CONFIG, ...overrides };
    const { stack, template } = synthStack({ config });
    const resources = template.toJSON().Resources as Record<string, { Properties: Record<string, unknown> }>;
    const logicalId = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
    const rules = (resources[logicalId(stack.landing.bucket)]!.Properties.LifecycleConfiguration as { Rules: TemplateLifecycleRule[] }).Rules;
    const schedule = /^rate\((\d+) minutes?\)$/.exec(resources[logicalId(stack.compaction.schedule)]!.Properties.ScheduleExpression as string);
    const workerMs = (resources[logicalId(stack.compaction.worker)]!.Properties.Timeout as number) * 1000;
    const slice: Slice = { orgId: 'acme', dt: '2026-03-01', hour: '00' };

    it('expires every manifest at the ceiling, so the views lose the hour then, and every compacted object later', () => {
      const written = Date.parse('2026-03-01T05:00:00Z');
      expect(expiresAtMs(rules, manifestKey(slice), written)).toBe(eligibleAtMs(written, config.dataRetentionDays!));
      expect(expiresAtMs(rules, compactedObjectKey('spans', slice, 1), written)).toBeGreaterThan(eligibleAtMs(written, config.dataRetentionDays!));
    });

    it.each([
      ['no compaction outage', 0],
      ['a day of compaction outage', DAY_MS],
    ])('never expires a compacted object a live manifest names, over every hour of the day and every late landing, with %s', (_outage, outageMs) => {
      expect(schedule).not.toBeNull();
      const timing: CompactionTiming = { scheduleMs: Number(schedule![1]) * 60 * 1000, workerMs, outageMs };
      // A trace may be 24 h old when received, and a replay lands it up to the stream's retention later.
      const lateWindowMs = DAY_MS + config.streamRetentionHours * HOUR_MS;
      const checked: Checked = { pairs: 0, oldestCarriedOverMs: 0, leastMarginMs: Infinity };
      for (let hour = 0; hour < 24; hour++) {
        const hourSlice: Slice = { ...slice, hour: String(hour).padStart(2, '0') };
        const hourEndMs = Date.parse(`${slice.dt}T00:00:00Z`) + (hour + 1) * HOUR_MS;
        for (let lateMs = 0; lateMs <= lateWindowMs; lateMs += 20 * 60 * 1000) {
          for (const dataset of DATASETS) {
            checkTimeline(rules, hourSlice, manifestTimeline(rules, hourSlice, hourEndMs, [{ dataset, landedAtMs: hourEndMs + lateMs }], timing), checked);
          }
        }
        // Late data every three hours of the window, alternating datasets: each object is carried over many times.
        const steady = Array.from({ length: Math.floor(lateWindowMs / (3 * HOUR_MS)) + 1 }, (_, i) => ({ dataset: DATASETS[i % 2]!, landedAtMs: hourEndMs + i * 3 * HOUR_MS }));
        checkTimeline(rules, hourSlice, manifestTimeline(rules, hourSlice, hourEndMs, steady, timing), checked);
      }
      expect(checked.pairs).toBeGreaterThan(10_000);
      // The case the rules must cover is there: objects named by manifests written days after them.
      expect(checked.oldestCarriedOverMs).toBeGreaterThan(lateWindowMs - DAY_MS);
      expect(checked.leastMarginMs).toBeGreaterThanOrEqual(DAY_MS);
    });
  });
});
