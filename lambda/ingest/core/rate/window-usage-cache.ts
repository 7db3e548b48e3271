import type { WindowCounter } from '../../../shared/domain/rate-windows.js';
import type { WindowCounts, WindowUsageReader } from './ports.js';

interface RecentRead {
  at: number;
  windows: string;
  counts: WindowCounts;
  /** Traces this container admitted for the organization since the read. */
  since: number;
}

/**
 * Reads an organization's counters at most once per `minIntervalMs` in this container, so a hot
 * organization's answers cost at most 1,000 / `minIntervalMs` reads per second per container (its
 * window items share one partition: a read per request would be throttled long before its writes
 * are, and would set off the rate table's throttling alarm). Between reads, the traces this
 * container admitted are added to the last counts, so a burst still sees its own use; other
 * containers' traffic in that interval is what `RateLimit` can miss.
 */
export class ThrottledWindowUsage implements WindowUsageReader {
  private readonly recent = new Map<string, RecentRead>();

  constructor(
    private readonly inner: WindowUsageReader,
    private readonly minIntervalMs = 100,
    private readonly now: () => number = Date.now,
    private readonly maxEntries = 10_000,
  ) {}

  async read(orgId: string, counters: readonly WindowCounter[], justAdmitted = 0): Promise<WindowCounts> {
    const windows = counters.map((counter) => `${counter.window}#${counter.windowStart}`).join('|');
    const hit = this.recent.get(orgId);
    if (hit && hit.windows === windows && this.now() - hit.at < this.minIntervalMs) {
      hit.since += justAdmitted;
      return Object.fromEntries(Object.entries(hit.counts).map(([window, count]) => [window, count + hit.since]));
    }
    const counts = await this.inner.read(orgId, counters, justAdmitted);
    this.recent.delete(orgId);
    if (this.recent.size >= this.maxEntries) this.recent.delete(this.recent.keys().next().value as string);
    this.recent.set(orgId, { at: this.now(), windows, counts, since: 0 });
    return counts;
  }
}
