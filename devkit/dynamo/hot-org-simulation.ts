import { DEFAULT_RATE_BACKOFF, DynamoDbRateLimiter } from '../../lambda/ingest/adapters/rate/dynamodb-rate-limiter.js';
import type { RateLimiter } from '../../lambda/ingest/core/rate/ports.js';
import { LeasingRateLimiter } from '../../lambda/ingest/core/rate/leasing-rate-limiter.js';
import { DependencyUnavailableError } from '../../lambda/shared/domain/errors.js';
import { countersFor } from '../../lambda/shared/domain/rate-windows.js';
import type { Quotas } from '../../lambda/shared/domain/tenancy.js';
import { backoffDelay, type BackoffPolicy } from '../../lambda/shared/runtime/backoff.js';
import { DynamoModel, type ModelOptions } from './model.js';
import { seededRandom, VirtualClock } from './virtual-clock.js';

/**
 * Open-loop traffic against the rate limiter over the in-memory DynamoDB model, on a virtual clock:
 * requests arrive as a Poisson process, each goes to an idle container (a new one when none is idle,
 * the way Lambda scales), reserves its traces, and holds the container for the publish after an
 * admission. Used by `npm run bench` (group `hot-org`) and by the tests that pin the design's targets.
 */

export type Design = 'per-request' | 'leases';

export interface SimulationInput {
  design: Design;
  /** Requests per second per organization. */
  ratePerOrg: number;
  orgs: number;
  tracesPerRequest: number;
  durationMs: number;
  /**
   * Before the measured `durationMs`, the offered rate ramps linearly from 0 over this long (not
   * counted): containers come up the way they do when a customer's fleet grows, instead of all
   * at once. Default 0 (no ramp).
   */
  rampMs?: number;
  quotas: Quotas;
  /** Time a container spends after admission (validation, publish). Default 20 ms. */
  publishMs?: number;
  /** Virtual start of the measured part: by default 45 s into a minute, so it crosses a minute boundary. */
  startMs?: number;
  seed?: number;
  model?: Partial<ModelOptions>;
  /** A container is never used again after this long: it dies holding whatever lease it has. */
  containerLifetimeMs?: number;
  /**
   * At the end, live containers give back their leases with `drain()` (a clean shutdown). Nothing in
   * production calls it; only the test named for drain sets this.
   */
  drainAtEnd?: boolean;
  /** Retry policy of the limiter's transactions; default the handler's. */
  policy?: BackoffPolicy;
}

export interface SimulationResult {
  design: Design;
  offered: number;
  /** Requests per second, over the run. */
  offeredPerSecond: number;
  acceptedPerSecond: number;
  accepted: number;
  unavailable: number;
  limited: number;
  p503: number;
  p429: number;
  p50Ms: number;
  p99Ms: number;
  wcuPerRequest: number;
  wcuPerAcceptedTrace: number;
  containers: number;
  /** Containers that died (past `containerLifetimeMs`) without giving anything back. */
  deadContainers: number;
  /** 503 answers per second of the run (the run starts 45 s into a minute). */
  unavailableBySecond: number[];
  /** Per organization: traces accepted vs. the month counter the model holds at the end. */
  acceptedTraces: Map<string, number>;
  model: DynamoModel;
}

export const RATE_TABLE_NAME = 'rate';

export async function simulateHotOrg(input: SimulationInput): Promise<SimulationResult> {
  const startMs = input.startMs ?? Date.UTC(2026, 10, 23, 10, 0, 45);
  const rampMs = input.rampMs ?? 0;
  const random = seededRandom(input.seed ?? 1);
  const clock = new VirtualClock(startMs - rampMs);
  const model = new DynamoModel(clock, { random, ...input.model });
  const client = model.client();
  const newLimiter = (): RateLimiter => {
    const policy = input.policy ?? DEFAULT_RATE_BACKOFF;
    const exact = new DynamoDbRateLimiter(client, RATE_TABLE_NAME, policy, clock.sleep, (retry) => backoffDelay(policy, retry, random));
    return input.design === 'leases' ? new LeasingRateLimiter(exact, clock.now, {}, exact.withAttempts(1, 'probe-'), random) : exact;
  };
  const idle: { limiter: RateLimiter; bornAt: number }[] = [];
  let containers = 0;
  let dead = 0;
  /** An idle container, or a new one; a container past `containerLifetimeMs` dies holding what it holds. */
  const acquire = (): RateLimiter => {
    let container = idle.pop();
    while (container && input.containerLifetimeMs !== undefined && clock.now() - container.bornAt >= input.containerLifetimeMs) {
      dead++;
      container = idle.pop();
    }
    container ??= { limiter: (containers++, newLimiter()), bornAt: clock.now() };
    busy.set(container.limiter, container);
    return container.limiter;
  };
  const busy = new Map<RateLimiter, { limiter: RateLimiter; bornAt: number }>();
  const releaseContainer = (limiter: RateLimiter) => {
    const container = busy.get(limiter);
    busy.delete(limiter);
    if (container) idle.push(container);
  };
  const latencies: number[] = [];
  const acceptedTraces = new Map<string, number>();
  let offered = 0;
  let accepted = 0;
  let unavailable = 0;
  let limited = 0;
  const unavailableBySecond: number[] = [];

  const handle = async (orgId: string, requestId: string, measured: boolean) => {
    if (!measured) return warmUp(orgId, requestId);
    const limiter = acquire();
    const counters = countersFor(input.quotas, new Date(clock.now()));
    const t0 = clock.now();
    try {
      const decision = await limiter.reserve(orgId, counters, input.tracesPerRequest, requestId);
      latencies.push(clock.now() - t0);
      if (decision.allowed) {
        accepted++;
        acceptedTraces.set(orgId, (acceptedTraces.get(orgId) ?? 0) + input.tracesPerRequest);
        await clock.sleep(input.publishMs ?? 20);
      } else {
        limited++;
      }
    } catch (error) {
      latencies.push(clock.now() - t0);
      if (!(error instanceof DependencyUnavailableError)) throw error;
      unavailable++;
      const second = Math.floor((t0 - startMs) / 1000);
      unavailableBySecond[second] = (unavailableBySecond[second] ?? 0) + 1;
    } finally {
      releaseContainer(limiter);
    }
  };

  /** A ramp-up request: served the same way, counted nowhere but in the org's accepted traces. */
  const warmUp = async (orgId: string, requestId: string) => {
    const limiter = acquire();
    try {
      const decision = await limiter.reserve(orgId, countersFor(input.quotas, new Date(clock.now())), input.tracesPerRequest, requestId);
      if (decision.allowed) {
        acceptedTraces.set(orgId, (acceptedTraces.get(orgId) ?? 0) + input.tracesPerRequest);
        await clock.sleep(input.publishMs ?? 20);
      }
    } catch (error) {
      if (!(error instanceof DependencyUnavailableError)) throw error;
    } finally {
      releaseContainer(limiter);
    }
  };

  const arrivals: Promise<void>[] = [];
  for (let org = 0; org < input.orgs; org++) {
    const orgId = `org-${org}`;
    let at = 0;
    let n = 0;
    for (;;) {
      at += -Math.log(1 - random()) * (1000 / input.ratePerOrg);
      if (at >= rampMs + input.durationMs) break;
      // Thinning: during the ramp an arrival is kept with the ramp's share of the full rate.
      if (at < rampMs && random() >= at / rampMs) continue;
      const measured = at >= rampMs;
      const requestId = `${orgId}-${n++}`;
      if (measured) offered++;
      arrivals.push(clock.sleep(at).then(() => handle(orgId, requestId, measured)));
    }
  }
  let wcuBefore = 0;
  void clock.sleep(rampMs).then(() => (wcuBefore = model.semantics.consumedWcu));
  await clock.run();
  await Promise.all(arrivals);
  const wcu = model.semantics.consumedWcu - wcuBefore;
  for (const { limiter, bornAt } of idle) {
    if (input.containerLifetimeMs !== undefined && clock.now() - bornAt >= input.containerLifetimeMs) dead++;
    else if (input.drainAtEnd && limiter instanceof LeasingRateLimiter) await drainOnClock(clock, limiter);
  }

  const seconds = input.durationMs / 1000;
  return {
    design: input.design,
    offered,
    offeredPerSecond: offered / seconds,
    acceptedPerSecond: accepted / seconds,
    accepted,
    unavailable,
    limited,
    p503: (100 * unavailable) / Math.max(1, offered),
    p429: (100 * limited) / Math.max(1, offered),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    wcuPerRequest: wcu / Math.max(1, offered),
    wcuPerAcceptedTrace: wcu / Math.max(1, accepted * input.tracesPerRequest),
    containers,
    deadContainers: dead,
    unavailableBySecond: Array.from(unavailableBySecond, (n) => n ?? 0),
    acceptedTraces,
    model,
  };
}

function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return 0;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? 0;
}

async function drainOnClock(clock: VirtualClock, limiter: LeasingRateLimiter): Promise<void> {
  const drained = limiter.drain();
  await clock.run();
  await drained;
}
