import type { Organization, Plan } from './tenancy.js';

/** The most days a plan or organization may keep data (100 years): anything longer is written as "none". */
export const MAX_RETENTION_DAYS = 36_500;

const DAY_MS = 24 * 60 * 60 * 1000;

/** Where the retention an organization runs under comes from. */
export type RetentionSource = 'plan' | 'organization' | 'stack';

/** The retention an organization runs under: days after an hour ends before its data is deleted, or `null` (kept). */
export interface AppliedRetention {
  days: number | null;
  source: RetentionSource;
}

/**
 * An organization's retention: its own override where it has one, else its plan's (a missing plan keeps);
 * the stack's `dataRetentionDays`, when set, is the ceiling over both.
 */
export function appliedRetention(org: Pick<Organization, 'retentionDays'>, plan: Pick<Plan, 'retentionDays'> | undefined, stackCeilingDays?: number): AppliedRetention {
  const chosen: AppliedRetention = org.retentionDays !== undefined ? { days: org.retentionDays, source: 'organization' } : { days: plan?.retentionDays ?? null, source: 'plan' };
  if (stackCeilingDays !== undefined && (chosen.days === null || chosen.days > stackCeilingDays)) return { days: stackCeilingDays, source: 'stack' };
  return chosen;
}

/** Whether `days` is a retention a plan or organization may have: a whole number of days, 1 to {@link MAX_RETENTION_DAYS}. */
export function isRetentionDays(days: unknown): days is number {
  return Number.isSafeInteger(days) && (days as number) >= 1 && (days as number) <= MAX_RETENTION_DAYS;
}

/** A stored retention that {@link isRetentionDays} refuses, and the item it is stored on. */
export interface InvalidRetention {
  item: 'organization' | 'plan';
  /** The value as stored, for the operator who fixes it. */
  stored: string;
}

/**
 * Why an organization's retention must not be acted on: its own item or its plan's holds a `retention_days` the admin
 * CLI would refuse (a console edit, a migration). Its plan's counts even under an override of its own: a plan item
 * that is wrong is fixed before anything on it is deleted.
 */
export function invalidRetention(org: Pick<Organization, 'invalidRetention'>, plan: Pick<Plan, 'invalidRetention'> | undefined): InvalidRetention | undefined {
  if (org.invalidRetention !== undefined) return { item: 'organization', stored: org.invalidRetention };
  if (plan?.invalidRetention !== undefined) return { item: 'plan', stored: plan.invalidRetention };
  return undefined;
}

/** The moment before which an hour (by its end) or a day (by its end) is past a retention of `days`, at `now`. */
export function retentionCutoff(days: number, now: Date): Date {
  return new Date(now.getTime() - days * DAY_MS);
}
