import { DATA_PREFIXES } from '../../shared/service-constants.js';
import type { DatasetName } from '../../datasets/registry.js';
import type { Partition } from './partition.js';

/**
 * Where erasure keeps its records in the data bucket (`erasures/`): the requests, each request's per-hour outcomes,
 * and the hour index (keyed hashes of the ids an hour's compacted generation holds). Each key is written and parsed
 * here only.
 */
export const ERASURE_ROOT = DATA_PREFIXES.erasures;

/** Every request of every organization (one LIST: the requests are few). */
export const ALL_REQUESTS_PREFIX = `${ERASURE_ROOT}requests/`;
export const requestPrefix = (orgId: string) => `${ALL_REQUESTS_PREFIX}org_id=${orgId}/`;
export const requestKey = (orgId: string, erasureId: string) => `${requestPrefix(orgId)}${erasureId}.json`;

/** The organization and erasure id of a request key, or undefined for any other key. */
export function requestOfKey(key: string): { orgId: string; erasureId: string } | undefined {
  const match = /^erasures\/requests\/org_id=([^/]+)\/([^/]+)\.json$/.exec(key);
  return match ? { orgId: match[1]!, erasureId: match[2]! } : undefined;
}

/** An hour as erasure records name it: `<dt>/<hour>`. */
export const hourOf = (slice: Pick<Partition, 'dt' | 'hour'>) => `${slice.dt}/${slice.hour}`;

export const outcomePrefix = (orgId: string, erasureId: string) => `${ERASURE_ROOT}outcomes/org_id=${orgId}/${erasureId}/`;
export const outcomeKey = (orgId: string, erasureId: string, hour: string) => `${outcomePrefix(orgId, erasureId)}${hour.replace('/', 'T')}.json`;

/** Every hour index object of an organization. */
export const orgIndexPrefix = (orgId: string) => `${ERASURE_ROOT}index/org_id=${orgId}/`;
/** Where one hour's index objects live: the retention sweep deletes them with the hour's compacted objects. */
export const hourIndexPrefix = (slice: Partition) => `${orgIndexPrefix(slice.orgId)}dt=${slice.dt}/hour=${slice.hour}/`;
/** The index of one dataset of an hour. */
export const indexKey = (slice: Partition, dataset: DatasetName) => `${hourIndexPrefix(slice)}${dataset}.json`;

/** The hour (`<dt>/<hour>`) of an index key (see {@link indexKey}), or undefined for any other key. */
export function hourOfIndexKey(key: string): string | undefined {
  const match = /^erasures\/index\/org_id=[^/]+\/dt=(\d{4}-\d{2}-\d{2})\/hour=(\d{2})\/[a-z]+\.json$/.exec(key);
  return match ? `${match[1]}/${match[2]}` : undefined;
}
