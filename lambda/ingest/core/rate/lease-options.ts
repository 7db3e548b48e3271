/** How leases are sized and when they are used; `DEFAULT_LEASE_OPTIONS` is what the handler runs with. */
export interface LeaseOptions {
  /** A lease covers this many seconds of the traffic the container has seen. */
  leaseSeconds: number;
  /** Traffic is measured over this many trailing seconds. */
  observeSeconds: number;
  /** A lease is taken only when it would cover at least this many batches of the current size. */
  minRequestsPerLease: number;
  /** No lease exceeds this fraction of the smallest quota among the windows. */
  maxLeaseFraction: number;
  /** After a conflict or throttling, the organization counts as hot in this container this long. */
  hotForMs: number;
  /** Largest factor a contended lease refill may grow the next lease by. */
  maxScale: number;
  /** Containers take the next minute's lease at a random moment this close to the minute's end. */
  prefetchSeconds: number;
  /** Below this smallest quota, every request stays on the exact per-request transaction. */
  minQuotaForLeases: number;
  /**
   * Traffic (traces/s seen by this container) that counts as hot without any contention. Infinite
   * by default: an organization whose transactions never conflict keeps today's behaviour exactly.
   * Tests on DynamoDB Local (which never conflicts) lower it to exercise leases.
   */
  hotAboveTracesPerSecond: number;
  /** Requests admitted from leases remembered for idempotent retries and give-backs (the oldest is forgotten first). */
  rememberedRequests: number;
}

export const DEFAULT_LEASE_OPTIONS: LeaseOptions = {
  leaseSeconds: 30,
  observeSeconds: 5,
  minRequestsPerLease: 4,
  maxLeaseFraction: 0.05,
  hotForMs: 60_000,
  maxScale: 32,
  prefetchSeconds: 20,
  minQuotaForLeases: 10_000,
  hotAboveTracesPerSecond: Number.POSITIVE_INFINITY,
  rememberedRequests: 10_000,
};

/**
 * The most one container can hold counted but unused for one organization: its open pool (one lease
 * plus less than one batch left over before the refill) and one more lease (the prefetched next
 * minute's, or the previous minute's pool waiting for this container's give-back moment). This is
 * what a container reclaimed by Lambda while holding leases leaves counted until the windows end,
 * and the most early 429s it can cause elsewhere.
 */
export function leaseSlackPerContainer(smallestQuota: number, largestBatch: number, options: Partial<LeaseOptions> = {}): number {
  const { maxLeaseFraction } = { ...DEFAULT_LEASE_OPTIONS, ...options };
  return 2 * (Math.floor(smallestQuota * maxLeaseFraction) + largestBatch);
}
