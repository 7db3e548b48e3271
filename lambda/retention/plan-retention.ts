import { sliceId } from '../lake/keys/compacted-keys.js';
import { type AppliedRetention, type InvalidRetention, appliedRetention, invalidRetention, retentionCutoff } from '../shared/domain/retention.js';
import { invalidSetting } from '../shared/domain/tenancy.js';
import { settleLimited } from '../shared/runtime/limited.js';
import { DATA_PREFIXES } from '../shared/service-constants.js';
import type { HourExpirySink, RetentionBucket, RetentionLogger, RetentionTenancy } from './ports.js';
import type { HourExpiry } from '../lake/ports.js';
import { READERS_GRACE_MS } from '../lake/readers-grace.js';
import { HOUR_PREFIXES, firstKeptDayKey, firstKeptHourKey, orgPrefix, sliceOfHourKey } from '../lake/keys/hour-prefixes.js';


/** Organizations swept at once: each holds only its expired keys, and its listings wait on S3, not on the CPU. */
export const ORGANIZATIONS_SWEPT_IN_PARALLEL = 8;

/** Some organizations could not be swept; the others were. The next run tries them again. */
export class RetentionSweepError extends Error {
  override name = 'RetentionSweepError';

  constructor(
    message: string,
    /** What the run did for the others, so that its metrics still count it. */
    readonly plan: RetentionPlan,
  ) {
    super(message);
  }
}

export interface RetentionPlanDeps {
  bucket: RetentionBucket;
  tenancy: RetentionTenancy;
  sink: HourExpirySink;
  now?: () => Date;
  logger?: RetentionLogger;
  /** The stack's `dataRetentionDays`, when set: the ceiling over every plan and organization. */
  stackCeilingDays?: number;
  readerGraceMs?: number;
}

/** What the sweep found and did for one organization. */
export interface OrganizationSweep {
  org_id: string;
  retention: AppliedRetention;
  /** Hours whose raw objects and manifest were sent for deletion. */
  hoursExpired: number;
  /** Hours without a manifest whose compacted objects were sent for deletion (past the readers' grace). */
  hoursCleared: number;
  /** Overflow objects of days past retention, deleted by the sweep itself. */
  overflowObjectsDeleted: number;
  overflowBytesDeleted: number;
}

/** An organization the sweep did not touch: its item or its plan's holds a `retention_days` that is not a retention, or another setting the admin CLI would refuse. */
export type SkippedOrganization = { org_id: string; item: InvalidRetention['item']; plan: string } & ({ stored_retention_days: string } | { attribute: string; stored: string });

export interface RetentionPlan {
  at: string;
  /** Organizations with a finite retention, looked at. */
  organizations: OrganizationSweep[];
  /** Organizations that keep their data (no retention anywhere): not listed at all. */
  kept: number;
  /** Organizations with an invalid stored retention or other setting: not listed, nothing of theirs deleted. */
  skipped: SkippedOrganization[];
}

/**
 * The hours of one organization past its retention, from listings that stop at the first hour kept (keys sort
 * by hour): an hour with raw objects or a manifest is expired (raw objects, then its manifest); an hour with
 * only compacted objects or part plans, past the readers' grace, is cleared. Overflow objects (keyed by the day
 * they were received, with no hour) go by the day, deleted here: no reader and no compaction reads them.
 */
async function sweepOrganization(deps: RetentionPlanDeps, orgId: string, retention: AppliedRetention & { days: number }, now: Date): Promise<OrganizationSweep> {
  const cutoff = retentionCutoff(retention.days, now);
  const graceCutoff = new Date(cutoff.getTime() - (deps.readerGraceMs ?? READERS_GRACE_MS));
  const listHours = async (roots: readonly string[], by: Date) => {
    const hours = new Map<string, HourExpiry['slice']>();
    for (const root of roots) {
      for (const object of await deps.bucket.listBefore(orgPrefix(root, orgId), firstKeptHourKey(root, orgId, by))) {
        const slice = sliceOfHourKey(object.key);
        if (slice) hours.set(sliceId(slice), slice);
      }
    }
    return hours;
  };
  const live = await listHours([...HOUR_PREFIXES.raw, ...HOUR_PREFIXES.manifests], cutoff);
  const leftovers = await listHours(HOUR_PREFIXES.compacted, graceCutoff);
  const expiries: HourExpiry[] = [...live.values()].map((slice) => ({ slice, deleteCompacted: false }));
  for (const [id, slice] of leftovers) if (!live.has(id)) expiries.push({ slice, deleteCompacted: true });
  if (expiries.length > 0) await deps.sink.expire(expiries);

  const overflow = await deps.bucket.listBefore(orgPrefix(DATA_PREFIXES.overflow, orgId), firstKeptDayKey(DATA_PREFIXES.overflow, orgId, cutoff));
  if (overflow.length > 0) await deps.bucket.delete(overflow.map((object) => object.key));
  return {
    org_id: orgId,
    retention,
    hoursExpired: live.size,
    hoursCleared: expiries.length - live.size,
    overflowObjectsDeleted: overflow.length,
    overflowBytesDeleted: overflow.reduce((sum, object) => sum + object.size, 0),
  };
}

/**
 * The retention sweep's plan: every organization's retention (its override, else its plan's, under the stack's
 * ceiling), and for each with one, its hours past it handed to `deps.sink`, in two steps an hour apart at least
 * (raw objects and manifest first, compacted objects on a later run). Rewrites nothing: every step is a delete.
 * An organization whose item or plan item holds an invalid `retention_days`, or another setting the admin CLI would
 * refuse (`invalidSetting`), is skipped whole, logged and reported.
 */
export async function planRetention(deps: RetentionPlanDeps): Promise<RetentionPlan> {
  const now = (deps.now ?? (() => new Date()))();
  const [organizations, plans] = await Promise.all([deps.tenancy.listOrganizations(), deps.tenancy.listPlans()]);
  const planOf = new Map(plans.map((plan) => [plan.name, plan]));
  const result: RetentionPlan = { at: now.toISOString(), organizations: [], kept: 0, skipped: [] };
  const swept: { orgId: string; retention: AppliedRetention & { days: number } }[] = [];
  for (const org of organizations.sort((a, b) => a.orgId.localeCompare(b.orgId))) {
    const plan = planOf.get(org.plan);
    const invalid = invalidRetention(org, plan);
    if (invalid) {
      const skipped: SkippedOrganization = { org_id: org.orgId, item: invalid.item, plan: org.plan, stored_retention_days: invalid.stored };
      result.skipped.push(skipped);
      deps.logger?.error('Retention: a stored retention_days is not a retention; nothing of the organization is deleted until it is fixed', { ...skipped });
      continue;
    }
    const setting = invalidSetting(org, plan);
    if (setting) {
      const skipped: SkippedOrganization = { org_id: org.orgId, plan: org.plan, ...setting };
      result.skipped.push(skipped);
      deps.logger?.error('Retention: a stored setting the admin CLI would refuse; nothing of the organization is deleted until it is fixed', { ...skipped });
      continue;
    }
    const retention = appliedRetention(org, plan, deps.stackCeilingDays);
    if (retention.days === null) result.kept++;
    else swept.push({ orgId: org.orgId, retention: { ...retention, days: retention.days } });
  }
  // One organization failing (a listing, a send) does not stop the others; the run fails at the end, so it is seen.
  const settled = await settleLimited(swept, ORGANIZATIONS_SWEPT_IN_PARALLEL, ({ orgId, retention }) => sweepOrganization(deps, orgId, retention, now));
  const failed: string[] = [];
  settled.forEach((outcome, index) => {
    const { orgId } = swept[index]!;
    if (outcome?.status === 'fulfilled') {
      result.organizations.push(outcome.value);
      const sweep = outcome.value;
      if (sweep.hoursExpired + sweep.hoursCleared + sweep.overflowObjectsDeleted > 0) deps.logger?.info('Retention: hours past retention sent for deletion', { ...sweep });
    } else {
      failed.push(orgId);
      deps.logger?.error('Retention: an organization could not be swept; the next run tries again', { org_id: orgId, error: outcome?.reason });
    }
  });
  if (failed.length > 0) throw new RetentionSweepError(`could not sweep ${failed.length} of ${swept.length} organizations (${failed.slice(0, 10).join(', ')}); the others were swept`, result);
  return result;
}
