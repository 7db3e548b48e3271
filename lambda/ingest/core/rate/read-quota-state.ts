import { countersFor, secondsUntilReset, windowLengthSeconds } from '../../../shared/domain/rate-windows.js';
import type { Quotas } from '../../../shared/domain/tenancy.js';
import type { Arrival } from '../ingest-types.js';
import type { IngestLogger } from '../ports.js';
import type { WindowCounts, WindowUsageReader } from './ports.js';
import type { QuotaState } from './quota-headers.js';

/** The answer does not wait longer than this for the counters; past it, it goes without `RateLimit`. */
export const QUOTA_READ_TIMEOUT_MS = 250;

/**
 * What every 200 and 429 reports of the organization's windows: each quota, when it resets and,
 * when the counters can be read in time, what is left. Never fails the request: a read that fails or
 * is slow leaves `remaining` out. `known` holds counts that are exact already (the full window's
 * count a cancelled transaction returned) and win over the read.
 */
export async function readQuotaState(
  ports: { windowUsage?: WindowUsageReader | undefined; logger: IngestLogger },
  caller: { org: { orgId: string }; quotas: Quotas },
  arrival: Pick<Arrival, 'receivedAtMicros'>,
  known: WindowCounts = {},
  justAdmitted = 0,
): Promise<QuotaState[]> {
  const at = new Date(Math.floor(arrival.receivedAtMicros / 1000));
  const counters = countersFor(caller.quotas, at);
  if (counters.length === 0) return [];
  const counts = ports.windowUsage ? await readInTime(ports, caller.org.orgId, counters, justAdmitted) : undefined;
  return counters.map((counter) => {
    const used = known[counter.window] ?? counts?.[counter.window];
    const state: QuotaState = {
      window: counter.window,
      quota: counter.quota,
      windowSeconds: windowLengthSeconds(counter.window, at),
      resetSeconds: secondsUntilReset(counter.window, at),
    };
    if (used !== undefined) state.remaining = Math.max(0, counter.quota - used);
    return state;
  });
}

async function readInTime(
  ports: { windowUsage?: WindowUsageReader | undefined; logger: IngestLogger },
  orgId: string,
  counters: Parameters<WindowUsageReader['read']>[1],
  justAdmitted: number,
): Promise<WindowCounts | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), QUOTA_READ_TIMEOUT_MS);
    timer.unref?.();
  });
  try {
    const counts = await Promise.race([(ports.windowUsage as WindowUsageReader).read(orgId, counters, justAdmitted), late]);
    if (counts === undefined) ports.logger.warn('Rate-window counters not read in time; answered without RateLimit', { orgId });
    return counts;
  } catch (error) {
    ports.logger.warn('Rate-window counters not read; answered without RateLimit', { orgId, error: (error as Error).name });
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}
