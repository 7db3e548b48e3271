import { type Slice, sliceStartMillis } from './compacted-keys.js';
import { partitionPath } from './partition.js';
import { DATA_PREFIXES } from '../../shared/service-constants.js';

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

/** The prefixes under which an organization's hours keep objects: raw, then manifests, then compacted (the order they are deleted in). */
export const HOUR_PREFIXES = {
  raw: [DATA_PREFIXES.traces, DATA_PREFIXES.spans],
  manifests: [DATA_PREFIXES.manifests],
  // The erasure hour index too: S3 lifecycle may remove an hour's compacted objects first, and the index alone must
  // still bring its hour a second step.
  compacted: [`${DATA_PREFIXES.compacted}traces/`, `${DATA_PREFIXES.compacted}spans/`, DATA_PREFIXES.partPlans, `${DATA_PREFIXES.erasures}index/`],
} as const;

/** `org_id=<org>/` under a root prefix: every key of the organization under it starts so. */
export const orgPrefix = (root: string, orgId: string) => `${root}org_id=${orgId}/`;

/**
 * The first key under `root` of the organization's first hour whose end is after `cutoff`: its keys
 * (`…/org_id=O/dt=YYYY-MM-DD/hour=HH/…`) sort by hour, so every key of the organization below this one belongs
 * to an hour that ended at or before `cutoff`.
 */
export function firstKeptHourKey(root: string, orgId: string, cutoff: Date): string {
  const firstKept = Math.floor((cutoff.getTime() - HOUR_MS) / HOUR_MS) * HOUR_MS + HOUR_MS;
  const iso = new Date(firstKept).toISOString();
  return `${root}${partitionPath({ orgId, dt: iso.slice(0, 10), hour: iso.slice(11, 13) })}`;
}

/** As {@link firstKeptHourKey} for keys that carry a day and no hour (`overflow/org_id=O/dt=YYYY-MM-DD/…`): by the day. */
export function firstKeptDayKey(root: string, orgId: string, cutoff: Date): string {
  const firstKept = Math.floor(cutoff.getTime() / DAY_MS) * DAY_MS;
  return `${orgPrefix(root, orgId)}dt=${new Date(firstKept).toISOString().slice(0, 10)}/`;
}

/** The hour of any key under an hour prefix (`…org_id=O/dt=…/hour=HH/…`), or undefined. */
export function sliceOfHourKey(key: string): Slice | undefined {
  const match = /(?:^|\/)org_id=([^/]+)\/dt=(\d{4}-\d{2}-\d{2})\/hour=(\d{2})\//.exec(key);
  return match ? { orgId: match[1]!, dt: match[2]!, hour: match[3]! } : undefined;
}

/** Whether the slice's hour ended at or before `cutoff`. */
export const hourEndedBy = (slice: Slice, cutoff: Date) => sliceStartMillis(slice) + HOUR_MS <= cutoff.getTime();
