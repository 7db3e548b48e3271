import { randomUUID } from 'node:crypto';
import { DependencyUnavailableError } from '../../../shared/domain/errors.js';
import { countersFor, type WindowCounter } from '../../../shared/domain/rate-windows.js';
import type { Quotas } from '../../../shared/domain/tenancy.js';
import { type RateDecision, type RateLimiter, WindowContentionError, type WindowReservations } from './ports.js';
import { DEFAULT_LEASE_OPTIONS, type LeaseOptions } from './lease-options.js';

interface Lease {
  id: string;
  size: number;
}

/** The quota a container holds for one organization and one set of window starts. */
interface LeasePool {
  /** Window starts and quotas: a pool whose quotas changed is retired, never admitted from. */
  windowsKey: string;
  quotasKey: string;
  /** The start of the minute the pool serves: a prefetched pool waits for it. */
  startsAt: number;
  /** Every lease ends with its minute: after this moment (the minute's end plus this container's margin) it is given back. */
  deadline: number;
  counters: readonly WindowCounter[];
  leases: Lease[];
  granted: number;
  used: number;
  closed: boolean;
}

interface OrgState {
  pool?: LeasePool;
  /** The next minute's lease, taken ahead of the rollover. */
  next?: LeasePool;
  prefetching?: boolean;
  /** Leases of past windows whose unused part is still to be given back. */
  retired: LeasePool[];
  /** Window starts for which this container stays on per-request transactions (quota is near). */
  exactFor?: string;
  arrivals: { at: number; count: number }[];
  /** Until when this organization counts as hot here: its transactions met conflicts or throttling. */
  hotUntil: number;
  /** Grows the next lease while refills keep meeting contention, so refills get rarer. */
  scale: number;
  /** Serializes lease work per organization inside one container. */
  queue: Promise<unknown>;
}

/**
 * Quota leases for hot organizations. A container that serves an organization often reserves a
 * block of quota in all four windows with one reservation of its `WindowReservations` (the same
 * conditional transaction, reservation marker and retries as a single request), admits batches from the block
 * locally, and gives back what it did not use when the block's windows end or it needs a new one.
 * So a hot organization's containers meet on its window items a few times a minute each instead of
 * once per request, and each request costs no write at all.
 *
 * What keeps it exact:
 * - A lease is counted in the windows before any trace is admitted from it, so the windows can
 *   never be exceeded, whatever happens to the container afterwards.
 * - A container uses the per-request transaction of its `WindowReservations` unchanged until one of
 *   its transactions for the organization is turned back by contention (light traffic
 *   never is), when the smallest quota is under `minQuotaForLeases`, and for the rest of the minute
 *   once a lease did not fit: light traffic and the last stretch before a quota behave exactly as
 *   without leases.
 * - The counters run ahead of accepted traces by at most the unused part of the leases a container
 *   holds: `leaseSlackPerContainer` (two leases plus two batches, about 10 % of the smallest quota)
 *   per container and organization (see docs/api.md "Rate limits"). Every admit, on any path, gives
 *   back what is retired: pools of past minutes, a prefetched minute that went unused, a pool whose
 *   quotas changed, the pool of an organization that cooled down, and (for the container's other
 *   organizations) any pool past its deadline. Only a container that Lambda reclaims, or that gets
 *   no request at all, keeps its part counted until the windows end.
 */
export class LeasingRateLimiter implements RateLimiter {
  private readonly orgs = new Map<string, OrgState>();
  private readonly admitted = new Map<string, { pool: LeasePool; count: number }>();
  private readonly options: LeaseOptions;
  /** This container's moment to take the next minute's lease: before the minute ends by this much. */
  private readonly prefetchOffsetMs: number;

  constructor(
    private readonly exact: WindowReservations,
    private readonly now: () => number = Date.now,
    options: Partial<LeaseOptions> = {},
    /** One attempt of the per-request transaction: a conflict on it marks the organization hot. */
    private readonly probe: WindowReservations = exact.withAttempts(1, 'probe-'),
    random: () => number = Math.random,
  ) {
    this.options = { ...DEFAULT_LEASE_OPTIONS, ...options };
    this.prefetchOffsetMs = 1_000 + random() * (this.options.prefetchSeconds - 1) * 1000;
  }

  reserve(orgId: string, counters: readonly WindowCounter[], count: number, requestId: string): Promise<RateDecision> {
    if (counters.length === 0 || count === 0) return Promise.resolve({ allowed: true });
    return this.serialized(orgId, (state) => this.admit(state, orgId, counters, count, requestId));
  }

  release(orgId: string, counters: readonly WindowCounter[], count: number, requestId: string): Promise<void> {
    if (counters.length === 0 || count === 0) return Promise.resolve();
    return this.serialized(orgId, async () => {
      const fromLease = this.admitted.get(requestId);
      if (!fromLease) return this.exact.release(orgId, counters, count, requestId);
      this.admitted.delete(requestId);
      if (!fromLease.pool.closed) {
        // Back into the lease: given back with the rest of it when the lease closes.
        fromLease.pool.used -= fromLease.count;
        return;
      }
      await this.exact.giveBack(orgId, fromLease.pool.counters, fromLease.count, requestId);
    });
  }

  /** Closes every open lease, giving back what was not used: for a container that is shutting down. */
  async drain(): Promise<void> {
    await Promise.all(
      [...this.orgs.keys()].map((orgId) =>
        this.serialized(orgId, async (state) => {
          for (const pool of [state.pool, state.next, ...state.retired.splice(0)]) if (pool) await this.closePool(orgId, pool);
          state.pool = state.next = undefined;
        }),
      ),
    );
  }

  private async admit(state: OrgState, orgId: string, counters: readonly WindowCounter[], count: number, requestId: string): Promise<RateDecision> {
    if (this.admitted.has(requestId)) return { allowed: true };
    const windowsKey = keyOf(counters);
    const leaseSize = this.leaseSize(state, counters, count);
    this.observe(state, count);
    this.retireStale(state, windowsKey, quotasKeyOf(counters));
    if (state.pool && !this.isHot(state)) {
      // The organization cooled down: what its lease did not use goes back now, not at the window's end.
      state.retired.push(state.pool);
      state.pool = undefined;
    }
    this.sweepIdleOrgs(orgId);
    try {
      return await this.admitAfterRetiring(state, orgId, counters, windowsKey, leaseSize, count, requestId);
    } finally {
      // Every path (probe, exact, per-request, lease) gives back what it retired.
      this.scheduleGiveBack(state, orgId);
    }
  }

  /**
   * Moves to `retired` every pool that must not be admitted from: the open pool when the request's
   * windows or quotas differ from it, and a prefetched `next` that is not the request's and whose
   * minute has already started (it went unused) or whose quotas changed.
   */
  private retireStale(state: OrgState, windowsKey: string, quotasKey: string): void {
    const now = this.now();
    const next = state.next;
    if (next && (next.startsAt <= now || next.quotasKey !== quotasKey)) {
      state.next = undefined;
      if (next.windowsKey === windowsKey && next.deadline > now) {
        if (state.pool) state.retired.push(state.pool);
        state.pool = next;
      } else {
        state.retired.push(next);
      }
    }
    if (state.pool && (state.pool.windowsKey !== windowsKey || state.pool.deadline <= now)) {
      state.retired.push(state.pool);
      state.pool = undefined;
    }
  }

  /**
   * Gives back the pools of other organizations of this container that passed their deadline: an
   * organization that stopped sending must not keep its lease counted while the container lives.
   */
  private sweepIdleOrgs(except: string): void {
    const now = this.now();
    for (const [orgId, state] of this.orgs) {
      if (orgId === except) continue;
      if (state.pool && state.pool.deadline <= now) {
        state.retired.push(state.pool);
        state.pool = undefined;
      }
      if (state.next && state.next.deadline <= now) {
        state.retired.push(state.next);
        state.next = undefined;
      }
      this.scheduleGiveBack(state, orgId);
    }
  }

  private async admitAfterRetiring(
    state: OrgState,
    orgId: string,
    counters: readonly WindowCounter[],
    windowsKey: string,
    leaseSize: number,
    count: number,
    requestId: string,
  ): Promise<RateDecision> {
    if (state.exactFor !== undefined && state.exactFor !== windowsKey) state.exactFor = undefined;

    const pool = state.pool;
    if (pool && pool.granted - pool.used >= count) return this.admitFrom(state, orgId, pool, count, requestId);
    if (state.exactFor === windowsKey) return this.exactReserve(state, orgId, counters, count, requestId);
    let size = leaseSize;
    if (size === 0) {
      const probed = await this.probeReserve(state, orgId, counters, count, requestId);
      if (probed) return probed;
      size = this.leaseSize(state, counters, count);
      if (size === 0) return this.exactReserve(state, orgId, counters, count, requestId);
    }
    const current = await this.takeLease(state, orgId, counters, size, state.pool);
    if (!current) {
      // Not room for a whole lease: the quota is near, so this minute runs on exact transactions.
      state.exactFor = windowsKey;
      return this.exactReserve(state, orgId, counters, count, requestId);
    }
    state.pool = current;
    return this.admitFrom(state, orgId, current, count, requestId);
  }

  /**
   * Reserves `size` traces in every window as one lease (added to `into` when given), or answers
   * `undefined` when a window has no room for it. Contention on the way grows the next lease.
   */
  private async takeLease(state: OrgState, orgId: string, counters: readonly WindowCounter[], size: number, into?: LeasePool, minuteStart = minuteOf(this.now())) {
    const lease: Lease = { id: `lease-${randomUUID()}`, size };
    let decision: RateDecision;
    const contentionBefore = this.exact.contentionCount(orgId);
    try {
      decision = await this.exact.reserve(orgId, counters, lease.size, lease.id);
    } catch (error) {
      // The lease may have been applied with only its answer lost: giving it back is exact either way.
      await this.exact.release(orgId, counters, lease.size, lease.id).catch(() => undefined);
      throw error;
    }
    const contended = this.exact.contentionCount(orgId) > contentionBefore;
    if (contended) state.hotUntil = this.now() + this.options.hotForMs;
    state.scale = contended ? Math.min(this.options.maxScale, state.scale * 2) : Math.max(1, state.scale / 2);
    if (!decision.allowed) return undefined;
    const pool = into ?? this.newPool(counters, minuteStart);
    pool.leases.push(lease);
    pool.granted += lease.size;
    return pool;
  }

  /**
   * Every container of a hot organization needs a new lease when the minute window rolls over;
   * taking them all at that instant would make them conflict with each other. So a container takes
   * the next minute's lease ahead, at its own random moment in the last `prefetchSeconds` of the
   * minute, after answering the request that found it due (queued behind it, not in front of it).
   */
  private newPool(counters: readonly WindowCounter[], minuteStart: number): LeasePool {
    return {
      windowsKey: keyOf(counters),
      quotasKey: quotasKeyOf(counters),
      startsAt: minuteStart,
      deadline: minuteStart + 60_000 + this.prefetchOffsetMs,
      counters,
      leases: [],
      granted: 0,
      used: 0,
      closed: false,
    };
  }

  private schedulePrefetch(state: OrgState, orgId: string, pool: LeasePool): void {
    if (state.next || state.prefetching || state.exactFor !== undefined) return;
    const now = this.now();
    const minuteEnd = Math.floor(now / 60_000) * 60_000 + 60_000;
    const dueAt = minuteEnd - this.prefetchOffsetMs;
    if (now < dueAt) return;
    // The pool's key holds its quotas, so these are the quotas of the request it just admitted.
    const nextCounters = countersFor(quotasOf(pool.counters), new Date(minuteEnd));
    const size = Math.max(...pool.leases.map((l) => l.size));
    state.prefetching = true;
    state.queue = state.queue
      .then(async () => {
        state.next = await this.takeLease(state, orgId, nextCounters, size, undefined, minuteEnd);
      })
      .catch(() => undefined) // no prefetch: the next minute starts with an ordinary refill
      .finally(() => {
        state.prefetching = false;
      });
  }

  /**
   * Leases of a past minute are given back after the answer, at this container's own moment past
   * the rollover: at the rollover itself every container's give-back would meet every other's on
   * the hour, day and month items, just when the new minute's leases need them.
   */
  private scheduleGiveBack(state: OrgState, orgId: string): void {
    if (state.retired.length === 0 || this.now() % 60_000 < this.prefetchOffsetMs) return;
    const retired = state.retired.splice(0);
    state.queue = state.queue.then(async () => {
      for (const pool of retired) await this.closePool(orgId, pool);
    });
  }

  private admitFrom(state: OrgState, orgId: string, pool: LeasePool, count: number, requestId: string): RateDecision {
    pool.used += count;
    this.admitted.set(requestId, { pool, count });
    if (this.admitted.size > this.options.rememberedRequests) this.admitted.delete(this.admitted.keys().next().value as string);
    this.schedulePrefetch(state, orgId, pool);
    return { allowed: true };
  }

  /**
   * Gives back the unused part of a pool, newest lease first (each give-back releases one lease's
   * reservation marker, so it applies once even when retried or when its answer is lost).
   */
  private async closePool(orgId: string, pool: LeasePool): Promise<void> {
    pool.closed = true;
    let unused = pool.granted - pool.used;
    for (const lease of [...pool.leases].reverse()) {
      if (unused <= 0) break;
      const give = Math.min(unused, lease.size);
      unused -= give;
      // A failed give-back leaves its part counted until the window ends: the safe direction.
      await this.exact.release(orgId, pool.counters, give, lease.id).catch(() => undefined);
    }
  }

  /**
   * One attempt of today's per-request transaction. Contention on it means other containers are
   * admitting this organization right now: instead of retrying (and adding to the contention) the
   * container marks the organization hot and answers from a lease. `undefined` means "take a lease".
   */
  private async probeReserve(state: OrgState, orgId: string, counters: readonly WindowCounter[], count: number, requestId: string) {
    try {
      return await this.probe.reserve(orgId, counters, count, requestId);
    } catch (error) {
      if (!(error instanceof DependencyUnavailableError)) throw error;
      // Not contention (a timeout, a 5xx): the ordinary retries take over. The reservation marker
      // makes that exact even if the probe was applied with only its answer lost.
      if (!(error instanceof WindowContentionError)) return this.exactReserve(state, orgId, counters, count, requestId);
      state.hotUntil = this.now() + this.options.hotForMs;
      return undefined;
    }
  }

  /** Today's per-request transaction; contention it meets marks the organization hot here. */
  private async exactReserve(state: OrgState, orgId: string, counters: readonly WindowCounter[], count: number, requestId: string) {
    const before = this.exact.contentionCount(orgId);
    try {
      return await this.exact.reserve(orgId, counters, count, requestId);
    } finally {
      if (this.exact.contentionCount(orgId) > before) state.hotUntil = this.now() + this.options.hotForMs;
    }
  }

  /** How many traces the next lease should hold, or 0 when this request should stay exact. */
  private leaseSize(state: OrgState, counters: readonly WindowCounter[], count: number): number {
    const now = this.now();
    const horizon = now - this.options.observeSeconds * 1000;
    state.arrivals = state.arrivals.filter((a) => a.at > horizon);
    const recent = state.arrivals.reduce((sum, a) => sum + a.count, 0);
    const perSecond = recent / this.options.observeSeconds;
    const hot = this.isHot(state);
    const smallestQuota = Math.min(...counters.map((c) => c.quota));
    if (!hot || smallestQuota < this.options.minQuotaForLeases) return 0;
    const floor = count * this.options.minRequestsPerLease;
    const wanted = Math.max(Math.ceil(perSecond * this.options.leaseSeconds), floor) * state.scale;
    const size = Math.min(wanted, Math.floor(smallestQuota * this.options.maxLeaseFraction));
    return size >= floor ? size : 0;
  }

  /** Hot: recent contention here, or (where configured) traffic above `hotAboveTracesPerSecond`. */
  private isHot(state: OrgState): boolean {
    const now = this.now();
    const horizon = now - this.options.observeSeconds * 1000;
    const recent = state.arrivals.reduce((sum, a) => sum + (a.at > horizon ? a.count : 0), 0);
    return state.hotUntil > now || recent / this.options.observeSeconds >= this.options.hotAboveTracesPerSecond;
  }

  private observe(state: OrgState, count: number): void {
    state.arrivals.push({ at: this.now(), count });
  }

  private serialized<T>(orgId: string, work: (state: OrgState) => Promise<T>): Promise<T> {
    let state = this.orgs.get(orgId);
    if (!state) this.orgs.set(orgId, (state = { arrivals: [], retired: [], hotUntil: 0, scale: 1, queue: Promise.resolve() }));
    const run = state.queue.then(() => work(state));
    state.queue = run.catch(() => undefined);
    return run;
  }
}

const keyOf = (counters: readonly WindowCounter[]) => counters.map((c) => `${c.window}#${c.windowStart}#${c.quota}`).join('|');
const quotasKeyOf = (counters: readonly WindowCounter[]) => counters.map((c) => `${c.window}=${c.quota}`).join('|');
const minuteOf = (at: number) => Math.floor(at / 60_000) * 60_000;

/** The quotas the counters were made from (a window without a counter has none). */
function quotasOf(counters: readonly WindowCounter[]): Quotas {
  const quotas: Quotas = { minute: null, hour: null, day: null, month: null };
  for (const counter of counters) quotas[counter.window] = counter.quota;
  return quotas;
}
