import { DATA_PREFIXES } from '../../shared/service-constants.js';
import type { TraceContext } from '../../shared/domain/trace.js';

/**
 * Where an oversized trace's body is stored (`overflow/org_id=…/dt=<received day>/<request>/<index>-<trace>.json.gz`):
 * deterministic, so a retried request overwrites its own object, and unique per record (the index in the batch), so
 * two traces of one request never share one.
 */
export function overflowObjectKey(context: Pick<TraceContext, 'org_id' | 'received_at' | 'request_id'>, index: number, traceId: string): string {
  return `${overflowDayPrefix(context.org_id, context.received_at.slice(0, 10))}${context.request_id}/${index}-${traceId}.json.gz`;
}

/** The overflow objects of an organization's traces received on one day (`YYYY-MM-DD`, UTC). */
export const overflowDayPrefix = (orgId: string, day: string) => `${DATA_PREFIXES.overflow}org_id=${orgId}/dt=${day}/`;

/** The trace id of an overflow key (see {@link overflowObjectKey}), or undefined for any other key. */
export function traceIdOfOverflowKey(key: string): string | undefined {
  return /^overflow\/org_id=[^/]+\/dt=\d{4}-\d{2}-\d{2}\/[^/]+\/\d+-([^/]+)\.json\.gz$/.exec(key)?.[1];
}
