import { DynamoDbRateLimiter } from '../../../lambda/ingest/adapters/rate/dynamodb-rate-limiter.js';
import { DEFAULT_LEASE_OPTIONS, type LeaseOptions, leaseSlackPerContainer } from '../../../lambda/ingest/core/rate/lease-options.js';
import { LeasingRateLimiter } from '../../../lambda/ingest/core/rate/leasing-rate-limiter.js';
import { type RateDecision, WindowContentionError, type WindowReservations } from '../../../lambda/ingest/core/rate/ports.js';
import { DependencyUnavailableError } from '../../../lambda/shared/domain/errors.js';
import { countersFor, type WindowCounter } from '../../../lambda/shared/domain/rate-windows.js';
import type { Quotas } from '../../../lambda/shared/domain/tenancy.js';
import { RATE_TABLE_NAME, simulateHotOrg } from '../../../devkit/dynamo/hot-org-simulation.js';
import { DynamoModel } from '../../../devkit/dynamo/model.js';
import { seededRandom, VirtualClock } from '../../../devkit/dynamo/virtual-clock.js';
import { rateKeys } from '../../../lambda/shared/tables.js';

/** Invariants of quota leases, on the DynamoDB model (conflicts, throttling, lost answers). */

const START = Date.UTC(2026, 10, 23, 10, 0, 5);
const PATIENT = { maxAttempts: 40, baseDelayMs: 10, maxDelayMs: 200 };

function windowItems(model: DynamoModel, orgId: string) {
  return model
    .items(RATE_TABLE_NAME)
    .filter((item) => item.pk?.S === `RATE#${orgId}` && !item.sk?.S?.startsWith('reservation#'))
    .map((item) => ({ sk: item.sk?.S ?? '', count: Number(item.count?.N ?? 0) }));
}

const monthCount = (model: DynamoModel, orgId: string) => windowItems(model, orgId).find((w) => w.sk.startsWith('month#'))?.count ?? 0;
const leaseMarkers = (model: DynamoModel) => model.items(RATE_TABLE_NAME).filter((item) => item.sk?.S?.startsWith('reservation#lease-')).length;

/**
 * The two simulations' sizes. `npm test` runs them full: 300 requests/s of 10 traces against 60,000 a minute for
 * 70 s (the quota binds after ~20 s of every minute), and 400 requests/s for 30 s. A mutation run
 * (bench/mutation.ts sets MUTATION_TESTS) repeats each for every mutant it covers, nearly all of the leasing code:
 * there they run smaller (about 0.5 s and 0.05 s instead of 16 s and 1.5 s) with the same assertions, and each
 * still crosses a minute's end, meets its quota, loses answers and sees containers die holding leases.
 */
const UNDER_MUTATION = process.env.MUTATION_TESTS !== undefined;
const HOT_NEAR_QUOTA = UNDER_MUTATION
  ? // 60 requests/s of 20 traces against 12,000 a minute, measured 10:00:50 to 10:01:15: the quota binds ~10 s into 10:01.
    { ratePerOrg: 60, tracesPerRequest: 20, startMs: Date.UTC(2026, 10, 23, 10, 0, 50), durationMs: 25_000, rampMs: 5_000, containerLifetimeMs: 5_000, quotas: { minute: 12_000, hour: 10_000_000, day: null, month: 10_000_000 } }
  : { ratePerOrg: 300, tracesPerRequest: 10, durationMs: 70_000, rampMs: 5_000, containerLifetimeMs: 15_000, quotas: { minute: 60_000, hour: 10_000_000, day: null, month: 10_000_000 } };
const DRAIN_SIZE = UNDER_MUTATION ? { ratePerOrg: 100, durationMs: 10_000 } : { ratePerOrg: 400, durationMs: 30_000 };

/**
 * A simulation takes ~10 s of CPU; on a 2-core machine running five CI runs at once (load 26) one took over a minute.
 * jest's timeout is only a bound against a hang here, never a measure of speed.
 */
const SIMULATION_TIMEOUT_MS = 600_000;

describe('LeasingRateLimiter on the DynamoDB model', () => {
  it('light traffic behaves exactly as the per-request transaction: one marker per request, counters equal accepted', async () => {
    const clock = new VirtualClock(START);
    const model = new DynamoModel(clock, { random: seededRandom(3) });
    const limiter = new LeasingRateLimiter(new DynamoDbRateLimiter(model.client(), RATE_TABLE_NAME, PATIENT, clock.sleep), clock.now);
    const quotas: Quotas = { minute: 1000, hour: 10_000, day: null, month: 100_000 };
    const done: Promise<unknown>[] = [];
    for (let i = 0; i < 12; i++) {
      done.push(clock.sleep(i * 4_000).then(() => limiter.reserve('light', countersFor(quotas, new Date(clock.now())), 7, `req-${i}`)));
    }
    await clock.run();
    expect(await Promise.all(done)).toEqual(Array(12).fill({ allowed: true }));
    const markers = model.items(RATE_TABLE_NAME).filter((item) => item.sk?.S?.startsWith('reservation#'));
    expect(markers.map((m) => m.sk?.S).sort()).toEqual(Array.from({ length: 12 }, (_, i) => rateKeys.reservation('light', `req-${i}`).sk).sort());
    expect(monthCount(model, 'light')).toBe(84);
  });

  it('100 containers racing batches of 10 against a quota of 255 end at exactly 250', async () => {
    const clock = new VirtualClock(START);
    const model = new DynamoModel(clock, { random: seededRandom(5) });
    const quotas: Quotas = { minute: 255, hour: null, day: null, month: null };
    const outcomes = Array.from({ length: 100 }, (_, i) =>
      new LeasingRateLimiter(new DynamoDbRateLimiter(model.client(), RATE_TABLE_NAME, PATIENT, clock.sleep), clock.now).reserve(
        'racing',
        countersFor(quotas, new Date(clock.now())),
        10,
        `race-${i}`,
      ),
    );
    await clock.run();
    const decisions = await Promise.all(outcomes);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(25);
    expect(windowItems(model, 'racing')).toEqual([{ sk: expect.stringMatching(/^minute#/), count: 250 }]);
  });

  it('mixed batch sizes racing: never over, and no refused batch would still fit', async () => {
    const clock = new VirtualClock(START);
    const model = new DynamoModel(clock, { random: seededRandom(9) });
    const random = seededRandom(11);
    const quotas: Quotas = { minute: 400, hour: 401, day: 402, month: 403 };
    const sizes = Array.from({ length: 80 }, () => 1 + Math.floor(random() * 12));
    const outcomes = sizes.map((size, i) =>
      clock.sleep(random() * 30).then(() =>
        new LeasingRateLimiter(new DynamoDbRateLimiter(model.client(), RATE_TABLE_NAME, PATIENT, clock.sleep), clock.now).reserve(
          'mixed',
          countersFor(quotas, new Date(clock.now())),
          size,
          `mixed-${i}`,
        ),
      ),
    );
    await clock.run();
    const decisions = await Promise.all(outcomes);
    const total = sizes.reduce((sum, size, i) => sum + (decisions[i]?.allowed ? size : 0), 0);
    const smallestRefused = Math.min(...sizes.filter((_, i) => !decisions[i]?.allowed));
    expect(total).toBeLessThanOrEqual(400);
    expect(total + smallestRefused).toBeGreaterThan(400);
    for (const window of windowItems(model, 'mixed')) expect(window.count).toBe(total);
  });

  it('a hot organization near its quota: never over in any minute, under lost answers and dying containers', async () => {
    const { quotas, ...input } = HOT_NEAR_QUOTA;
    const result = await simulateHotOrg({ design: 'leases', orgs: 1, quotas, model: { lostAnswerRate: 0.02 }, ...input });
    expect(leaseMarkers(result.model)).toBeGreaterThan(0);
    expect(result.limited).toBeGreaterThan(0);
    expect(result.deadContainers).toBeGreaterThan(0);
    const windows = windowItems(result.model, 'org-0');
    const minutes = windows.filter((w) => w.sk.startsWith('minute#'));
    expect(minutes.length).toBeGreaterThan(1); // it crosses a minute's end
    for (const minute of minutes) expect(minute.count).toBeLessThanOrEqual(quotas.minute);
    // Counted vs accepted, with no drain(): never under; over by at most the stated slack per container
    // (dead ones, and live ones that have had no request since: both hold their pool and next).
    const accepted = result.acceptedTraces.get('org-0') ?? 0;
    const month = monthCount(result.model, 'org-0');
    expect(month).toBeGreaterThanOrEqual(accepted);
    expect(month - accepted).toBeLessThanOrEqual(result.containers * leaseSlackPerContainer(quotas.minute, input.tracesPerRequest));
  }, SIMULATION_TIMEOUT_MS);

  it('drain() at a clean shutdown gives back every lease: without dead containers or lost answers, counters end equal to accepted', async () => {
    const quotas: Quotas = { minute: 5_000_000, hour: null, day: null, month: 1e12 };
    const result = await simulateHotOrg({ design: 'leases', orgs: 1, tracesPerRequest: 10, rampMs: 5_000, quotas, drainAtEnd: true, ...DRAIN_SIZE });
    expect(leaseMarkers(result.model)).toBeGreaterThan(0);
    expect(result.p503).toBe(0);
    expect(monthCount(result.model, 'org-0')).toBe(result.acceptedTraces.get('org-0'));
  }, SIMULATION_TIMEOUT_MS);

  it('give-back on a publish failure is exact, inside the lease and after it closed', async () => {
    const clock = new VirtualClock(START);
    const model = new DynamoModel(clock, { random: seededRandom(2) });
    const limiter = new LeasingRateLimiter(new DynamoDbRateLimiter(model.client(), RATE_TABLE_NAME, PATIENT, clock.sleep), clock.now, {
      hotAboveTracesPerSecond: 10,
    });
    const quotas: Quotas = { minute: 100_000, hour: null, day: null, month: 1e9 };
    const run = <T>(work: Promise<T>) => clock.runThrough(work);
    for (let i = 0; i < 20; i++) {
      await run(limiter.reserve('give', countersFor(quotas, new Date(clock.now())), 10, `g-${i}`));
      await run(clock.sleep(100));
    }
    expect(model.items(RATE_TABLE_NAME).some((item) => item.sk?.S?.startsWith('reservation#lease-'))).toBe(true);
    // Released twice (a retried give-back): counted once.
    await run(limiter.release('give', countersFor(quotas, new Date(clock.now())), 10, 'g-19'));
    await run(limiter.release('give', countersFor(quotas, new Date(clock.now())), 10, 'g-19'));
    await run(limiter.drain());
    expect(monthCount(model, 'give')).toBe(190);
    // A request from a closed lease is given back by its own marked transaction, once.
    await run(limiter.release('give', countersFor(quotas, new Date(clock.now())), 10, 'g-18'));
    expect(monthCount(model, 'give')).toBe(180);
  });
});

/** One container of a hot organization, on the model with a virtual clock; nothing here calls drain(). */
function oneContainer(seed: number) {
  const clock = new VirtualClock(START);
  const model = new DynamoModel(clock, { random: seededRandom(seed) });
  // `random` 0: this container's prefetch and give-back moment is 1 s before/after the minute's end.
  const limiter = new LeasingRateLimiter(
    new DynamoDbRateLimiter(model.client(), RATE_TABLE_NAME, PATIENT, clock.sleep),
    clock.now,
    { hotAboveTracesPerSecond: 10 },
    undefined,
    () => 0,
  );
  let accepted = 0;
  let n = 0;
  /** Sends batches of 10 every `everyMs` until the clock reaches `untilMs`; answers how many were allowed. */
  const send = async (orgId: string, quotas: Quotas, everyMs: number, untilMs: number) => {
    let allowed = 0;
    while (clock.now() < untilMs) {
      const decision = limiter.reserve(orgId, countersFor(quotas, new Date(clock.now())), 10, `${orgId}-${n++}`);
      await clock.run();
      if ((await decision).allowed) allowed += 10;
      const pause = clock.sleep(everyMs);
      await clock.run(clock.now() + everyMs);
      await pause;
    }
    accepted += allowed;
    return allowed;
  };
  const minuteCount = (orgId: string, start: string) => windowItems(model, orgId).find((w) => w.sk === `minute#${start}`)?.count ?? 0;
  return { clock, model, limiter, send, minuteCount, accepted: () => accepted };
}

describe('LeasingRateLimiter: leases always go back, without drain()', () => {
  it('a lowered quota applies at once to a container holding a lease, and the lease goes back', async () => {
    const { clock, model, send } = oneContainer(21);
    const high: Quotas = { minute: null, hour: null, day: null, month: 10_000_000 };
    const before = await send('lowered', high, 100, START + 1_000);
    expect(before).toBeGreaterThanOrEqual(50);
    expect(monthCount(model, 'lowered')).toBeGreaterThan(before); // a lease is open
    const low: Quotas = { ...high, month: 50 };
    expect(await send('lowered', low, 100, clock.now() + 2_500)).toBe(0);
    expect(monthCount(model, 'lowered')).toBe(before);
    // Raised again: admitted again under the new quota.
    expect(await send('lowered', high, 100, clock.now() + 1_000)).toBeGreaterThan(0);
  });

  it('a prefetched lease that goes unused is given back, and prefetching resumes', async () => {
    const { clock, model, send, minuteCount, accepted } = oneContainer(22);
    const quotas: Quotas = { minute: 1_000_000, hour: 10_000_000, day: null, month: 100_000_000 };
    // Hot through 10:00 (the prefetch for 10:01 runs in its last second), then silent until 10:02:10.
    await send('idle', quotas, 100, Date.UTC(2026, 10, 23, 10, 0, 59, 500));
    expect(minuteCount('idle', '2026-11-23T10:01Z')).toBeGreaterThan(0);
    await clock.run(Date.UTC(2026, 10, 23, 10, 2, 10));
    await send('idle', quotas, 100, Date.UTC(2026, 10, 23, 10, 2, 59, 500));
    expect(minuteCount('idle', '2026-11-23T10:01Z')).toBe(0);
    // The 10:02 lease is still open and the 10:03 lease prefetched: counted may run ahead by the slack.
    const slack = leaseSlackPerContainer(1_000_000, 10);
    expect(monthCount(model, 'idle') - accepted()).toBeLessThanOrEqual(slack);
    expect(minuteCount('idle', '2026-11-23T10:03Z')).toBeGreaterThan(0);
    // One more request in 10:03 past the give-back moment: only the open 10:03 lease stays counted.
    await clock.run(Date.UTC(2026, 10, 23, 10, 3, 2));
    await send('idle', quotas, 100, Date.UTC(2026, 10, 23, 10, 3, 2, 50));
    const open = minuteCount('idle', '2026-11-23T10:03Z') - 10;
    expect(windowItems(model, 'idle').find((w) => w.sk.startsWith('hour#'))?.count).toBe(accepted() + open);
    expect(monthCount(model, 'idle')).toBe(accepted() + open);
  });

  it('an organization that cools down gives its lease back at its next request', async () => {
    const { clock, model, send, accepted } = oneContainer(23);
    const quotas: Quotas = { minute: null, hour: null, day: null, month: 100_000_000 };
    await send('cooling', quotas, 100, START + 5_000);
    expect(monthCount(model, 'cooling')).toBeGreaterThan(accepted());
    // Light traffic now (one batch every 10 s): not hot any more, so the next request retires the lease.
    await send('cooling', quotas, 10_000, clock.now() + 20_000);
    expect(monthCount(model, 'cooling')).toBe(accepted());
  });

  it('an idle organization is given back after its lease deadline by another organization’s request', async () => {
    const { clock, model, send, accepted } = oneContainer(24);
    const quotas: Quotas = { minute: 1_000_000, hour: null, day: null, month: 100_000_000 };
    await send('gone', quotas, 100, START + 5_000);
    expect(monthCount(model, 'gone')).toBeGreaterThan(accepted());
    // 'gone' never sends again; past its minute's end plus the margin, 'other' reaches the container.
    await clock.run(Date.UTC(2026, 10, 23, 10, 1, 30));
    await send('other', { minute: null, hour: null, day: null, month: 1000 }, 100, clock.now() + 50);
    expect(monthCount(model, 'gone')).toBe(accepted() - 10);
  });
});

describe('LeasingRateLimiter near a quota large enough for leases', () => {
  it('containers racing on leases against 20,000 a minute: never over, and short of it by at most the stated slack', async () => {
    const clock = new VirtualClock(START);
    const model = new DynamoModel(clock, { random: seededRandom(31) });
    const quotas: Quotas = { minute: 20_000, hour: null, day: null, month: null };
    const containers = 4;
    let accepted = 0;
    const runContainer = async (c: number) => {
      const limiter = new LeasingRateLimiter(new DynamoDbRateLimiter(model.client(), RATE_TABLE_NAME, PATIENT, clock.sleep), clock.now, {
        hotAboveTracesPerSecond: 10,
      });
      // Until refused; bounded (at most all 20,000 traces from each container), so a limiter that never refuses fails the test instead of hanging it.
      for (let i = 0; i < 2_000; i++) {
        const decision = await limiter.reserve('near', countersFor(quotas, new Date(clock.now())), 10, `near-${c}-${i}`);
        if (!decision.allowed) return;
        accepted += 10;
        await clock.sleep(5);
      }
    };
    const done = Promise.all(Array.from({ length: containers }, (_, c) => runContainer(c)));
    await clock.run(START + 50_000); // every container meets the quota well inside the minute
    await done;
    expect(model.items(RATE_TABLE_NAME).some((item) => item.sk?.S?.startsWith('reservation#lease-'))).toBe(true);
    const minute = windowItems(model, 'near')[0]?.count ?? 0;
    expect(minute).toBeLessThanOrEqual(20_000);
    expect(accepted).toBeLessThanOrEqual(20_000);
    expect(accepted).toBeGreaterThanOrEqual(20_000 - containers * leaseSlackPerContainer(20_000, 10));
  });
});

/** The port alone, as a plain fake: every call recorded; the probe (one attempt) fails with `probeFailure`. */
class RecordingReservations implements WindowReservations {
  readonly calls: string[] = [];
  constructor(
    private readonly probeFailure?: Error,
    /** Refuses every lease, as a window with no room for one does. */
    private readonly refuseLeases = false,
  ) {}
  reserve(_orgId: string, _counters: unknown, count: number, requestId: string): Promise<RateDecision> {
    const lease = requestId.startsWith('lease-');
    this.calls.push(`reserve ${lease ? 'lease' : requestId} ${count}`);
    return Promise.resolve(lease && this.refuseLeases ? { allowed: false, overflowing: [] } : { allowed: true });
  }
  release(_orgId: string, _counters: unknown, count: number, requestId: string): Promise<void> {
    this.calls.push(`release ${requestId.startsWith('lease-') ? 'lease' : requestId} ${count}`);
    return Promise.resolve();
  }
  giveBack(_orgId: string, _counters: unknown, count: number, giveBackId: string): Promise<void> {
    this.calls.push(`give back ${giveBackId} ${count}`);
    return Promise.resolve();
  }
  contentionCount(): number {
    return 0;
  }
  withAttempts(): WindowReservations {
    const failure = this.probeFailure;
    return { ...this, reserve: () => (failure ? Promise.reject(failure) : Promise.resolve({ allowed: true })) } as WindowReservations;
  }
}

describe('LeasingRateLimiter over its port (no DynamoDB)', () => {
  const quotas: Quotas = { minute: 100_000, hour: 1_000_000, day: null, month: null };
  const counters = countersFor(quotas, new Date(START));
  const hourly = countersFor({ minute: null, hour: 1_000_000, day: null, month: null }, new Date(START));

  it('takes a lease once the probe is turned back by contention (WindowContentionError)', async () => {
    const exact = new RecordingReservations(new WindowContentionError('dynamodb', 'conflict'));
    const limiter = new LeasingRateLimiter(exact, () => START, {}, undefined, () => 0);
    await expect(limiter.reserve('acme', counters, 10, 'req-1')).resolves.toEqual({ allowed: true });
    // 10 traces in the 5 s observed make 2/s: a lease of 30 s of that, its unused 50 given back on drain.
    await limiter.drain();
    expect(exact.calls).toEqual(['reserve lease 60', 'release lease 50']);
  });

  /** A limiter whose first request found contention, so it holds a lease of 60 (10 traces in 5 s: 2/s for 30 s) with 10 used. */
  async function leasedSixty() {
    const exact = new RecordingReservations(new WindowContentionError('dynamodb', 'conflict'));
    const limiter = new LeasingRateLimiter(exact, () => START, {}, undefined, () => 0);
    await limiter.reserve('acme', counters, 10, 'req-1');
    expect(exact.calls).toEqual(['reserve lease 60']);
    return { exact, limiter };
  }

  it('admits a batch that uses exactly what is left of the lease from it, with no transaction', async () => {
    const { exact, limiter } = await leasedSixty();
    await expect(limiter.reserve('acme', counters, 50, 'req-2')).resolves.toEqual({ allowed: true });
    await limiter.drain();
    // All 60 used: nothing to give back.
    expect(exact.calls).toEqual(['reserve lease 60']);
  });

  it('never admits one trace past the lease: a batch one larger than what is left takes a new lease first', async () => {
    const { exact, limiter } = await leasedSixty();
    await limiter.reserve('acme', counters, 41, 'req-2');
    // 9 left; a batch of 10 must not come from them.
    await expect(limiter.reserve('acme', counters, 10, 'req-3')).resolves.toEqual({ allowed: true });
    await limiter.drain();
    // 51 traces in the last 5 s make 10.2/s: the refill covers 30 s of it, 306; of 366 granted, 61 were used.
    expect(exact.calls).toEqual(['reserve lease 60', 'reserve lease 306', 'release lease 305']);
  });

  it('counts a repeated reserve of a request admitted from the lease once', async () => {
    const { exact, limiter } = await leasedSixty();
    await expect(limiter.reserve('acme', counters, 10, 'req-1')).resolves.toEqual({ allowed: true });
    // Still 50 left for another request.
    await limiter.reserve('acme', counters, 50, 'req-2');
    await limiter.drain();
    expect(exact.calls).toEqual(['reserve lease 60']);
  });

  it('puts a released request back into its open lease, and gives a request of a closed lease back by its own id', async () => {
    const { exact, limiter } = await leasedSixty();
    await limiter.reserve('acme', counters, 20, 'req-2');
    await limiter.release('acme', counters, 10, 'req-1');
    await limiter.drain();
    // 30 used, 10 of them released into the lease: 40 of 60 go back with it.
    expect(exact.calls).toEqual(['reserve lease 60', 'release lease 40']);
    await limiter.release('acme', counters, 20, 'req-2');
    expect(exact.calls).toEqual(['reserve lease 60', 'release lease 40', 'give back req-2 20']);
    // Released again, it is no longer the lease's: the per-request release finds no marker of it and gives nothing back.
    await limiter.release('acme', counters, 20, 'req-2');
    expect(exact.calls.slice(3)).toEqual(['release req-2 20']);
  });

  it('remembers the last rememberedRequests (10,000) requests it admitted from leases: a release of an older one goes to the per-request transaction', async () => {
    expect(DEFAULT_LEASE_OPTIONS.rememberedRequests).toBe(10_000);
    const exact = new RecordingReservations(new WindowContentionError('dynamodb', 'conflict'));
    let now = START;
    const limiter = new LeasingRateLimiter(exact, () => now, { rememberedRequests: 3 }, undefined, () => 0);
    // One batch every 20 s (one hour window): r-0's and r-1's lease closed at its deadline.
    for (let i = 0; i <= 3; i++, now += 20_000) await limiter.reserve('acme', hourly, 10, `r-${i}`);
    await limiter.release('acme', hourly, 10, 'r-0');
    await limiter.release('acme', hourly, 10, 'r-1');
    // r-1 is given back by its own id; r-0 is forgotten, so its release is the per-request one (it finds no marker).
    expect(exact.calls.filter((call) => !call.includes(' lease '))).toEqual(['release r-0 10', 'give back r-1 10']);
  });

  it('neither reserves nor releases a batch of nothing, or one with no window to count it in', async () => {
    const exact = new RecordingReservations(new WindowContentionError('dynamodb', 'conflict'));
    const limiter = new LeasingRateLimiter(exact, () => START, {}, undefined, () => 0);
    await expect(limiter.reserve('acme', counters, 0, 'req-1')).resolves.toEqual({ allowed: true });
    await expect(limiter.reserve('acme', [], 10, 'req-2')).resolves.toEqual({ allowed: true });
    await limiter.release('acme', counters, 0, 'req-1');
    await limiter.release('acme', [], 10, 'req-2');
    await limiter.drain();
    expect(exact.calls).toEqual([]);
  });

  it.each([
    ['a smallest quota under minQuotaForLeases (10,000) stays per request', 9_999, 10, ['reserve req-1 10']],
    ['a smallest quota of exactly minQuotaForLeases leases', 10_000, 10, ['reserve lease 60']],
    // 125 traces in 5 s: 750 wanted, capped at 5 % of 10,000; 4 batches of 125 just fit.
    ['a lease capped at 5 % of the quota that still holds 4 batches leases', 10_000, 125, ['reserve lease 500']],
    ['a lease capped at 5 % of the quota that would hold fewer than 4 batches stays per request', 10_000, 126, ['reserve req-1 126']],
  ])('a hot organization with %s', async (_, minute, count, calls) => {
    const exact = new RecordingReservations(new WindowContentionError('dynamodb', 'conflict'));
    const limiter = new LeasingRateLimiter(exact, () => START, {}, undefined, () => 0);
    const small = countersFor({ minute, hour: null, day: null, month: null }, new Date(START));
    await expect(limiter.reserve('acme', small, count, 'req-1')).resolves.toEqual({ allowed: true });
    expect(exact.calls).toEqual(calls);
  });

  it('stays on per-request reservations for the rest of the minute once a lease did not fit, and leases again the next minute', async () => {
    let now = START;
    const exact = new RecordingReservations(new WindowContentionError('dynamodb', 'conflict'), true);
    const limiter = new LeasingRateLimiter(exact, () => now, {}, undefined, () => 0);
    await expect(limiter.reserve('acme', counters, 10, 'req-1')).resolves.toEqual({ allowed: true });
    await expect(limiter.reserve('acme', counters, 10, 'req-2')).resolves.toEqual({ allowed: true });
    expect(exact.calls).toEqual(['reserve lease 60', 'reserve req-1 10', 'reserve req-2 10']);
    now = START + 60_000;
    await limiter.reserve('acme', countersFor(quotas, new Date(now)), 10, 'req-3');
    expect(exact.calls.slice(3)).toEqual([expect.stringMatching(/^reserve lease \d+$/), 'reserve req-3 10']);
  });

  it('stays on the per-request reservation when the probe fails for another reason (a timeout, a 5xx)', async () => {
    const exact = new RecordingReservations(new DependencyUnavailableError('dynamodb', 'timed out'));
    const limiter = new LeasingRateLimiter(exact, () => START, {}, undefined, () => 0);
    await expect(limiter.reserve('acme', counters, 10, 'req-1')).resolves.toEqual({ allowed: true });
    await limiter.drain();
    expect(exact.calls).toEqual(['reserve req-1 10']);
  });
});

/**
 * The port as a plain fake on a clock the test sets: every call recorded with the minute it counts in (`lease` for a
 * lease's id). The reserves numbered in `contended` (from 1) count as turned back by other writers first
 * (contentionCount grows); `refuseLeases` answers a lease as a window with no room for it; the probe fails with `probeFailure`.
 */
class MinuteReservations implements WindowReservations {
  readonly calls: string[] = [];
  contended = new Set<number>();
  failLeases?: Error;
  refuseLeases = false;
  probeFailure: Error = new WindowContentionError('dynamodb', 'conflict');
  private contention = 0;
  private reserves = 0;
  private calledFor(op: string, orgId: string, counters: readonly WindowCounter[], count: number, id: string) {
    const minute = counters.find((c) => c.window === 'minute')?.windowStart.slice(11, 16) ?? '-';
    this.calls.push(`${orgId === 'acme' ? '' : `${orgId}: `}${op} ${id.startsWith('lease-') ? 'lease' : id} ${count} ${minute}`);
  }
  reserve(orgId: string, counters: readonly WindowCounter[], count: number, requestId: string): Promise<RateDecision> {
    this.calledFor('reserve', orgId, counters, count, requestId);
    if (this.contended.has(++this.reserves)) this.contention++;
    if (!requestId.startsWith('lease-')) return Promise.resolve({ allowed: true });
    if (this.failLeases) return Promise.reject(this.failLeases);
    return Promise.resolve(this.refuseLeases ? { allowed: false, overflowing: [] } : { allowed: true });
  }
  release(orgId: string, counters: readonly WindowCounter[], count: number, requestId: string): Promise<void> {
    this.calledFor('release', orgId, counters, count, requestId);
    return Promise.resolve();
  }
  giveBack(orgId: string, counters: readonly WindowCounter[], count: number, giveBackId: string): Promise<void> {
    this.calledFor('give back', orgId, counters, count, giveBackId);
    return Promise.resolve();
  }
  contentionCount(): number {
    return this.contention;
  }
  withAttempts(): WindowReservations {
    return { ...this, reserve: () => Promise.reject(this.probeFailure) } as unknown as WindowReservations;
  }
}

describe('LeasingRateLimiter over its port, at the moments it acts', () => {
  const at = (minute: number, second: number, ms = 0) => Date.UTC(2026, 10, 23, 10, minute, second, ms);
  const quotas: Quotas = { minute: 100_000, hour: 1_000_000, day: null, month: null };

  /** A limiter whose random moment is 0.5: it takes the next minute's lease 10.5 s before a minute ends (1 s + half of 19 s) and gives back 10.5 s after. */
  function limiterAt(start: number, options: Partial<LeaseOptions> = {}, windows: Quotas = quotas) {
    const exact = new MinuteReservations();
    let now = start;
    const limiter = new LeasingRateLimiter(exact, () => now, { hotForMs: 3_600_000, ...options }, undefined, () => 0.5);
    let n = 0;
    /** A batch of `count` at `moment`, after every queued lease transaction of the one before has run. */
    const send = async (moment: number, count = 10, orgId = 'acme') => {
      now = moment;
      const decision = await limiter.reserve(orgId, countersFor(windows, new Date(moment)), count, `req-${++n}`);
      await new Promise((resolve) => setImmediate(resolve));
      return decision;
    };
    return { exact, limiter, send, setNow: (moment: number) => (now = moment) };
  }

  it('takes the next minute’s lease at its own moment before the minute ends, and admits from it in that minute', async () => {
    const { exact, send } = limiterAt(at(0, 5));
    await send(at(0, 5));
    await send(at(0, 49, 499));
    expect(exact.calls).toEqual(['reserve lease 60 10:00']);
    await send(at(0, 49, 500));
    expect(exact.calls).toEqual(['reserve lease 60 10:00', 'reserve lease 60 10:01']);
    await send(at(1, 0));
    await send(at(1, 5));
    expect(exact.calls).toHaveLength(2);
  });

  it('gives a past minute’s lease back at its own moment after the minute ends, not at the rollover', async () => {
    const { exact, send } = limiterAt(at(0, 5));
    await send(at(0, 5));
    await send(at(0, 49, 500));
    await send(at(1, 10, 499));
    expect(exact.calls).toEqual(['reserve lease 60 10:00', 'reserve lease 60 10:01']);
    await send(at(1, 10, 500));
    // 20 of the 10:00 lease were used; the 10:01 lease (prefetched) serves the minute.
    expect(exact.calls.slice(2)).toEqual(['release lease 40 10:00']);
  });

  it('without a minute quota, a lease serves past its minute until this container’s deadline, then goes back and a new one is taken', async () => {
    const { exact, send } = limiterAt(at(0, 5), {}, { minute: null, hour: 1_000_000, day: null, month: null });
    await send(at(0, 5));
    await send(at(0, 40));
    await send(at(1, 10, 499));
    expect(exact.calls).toEqual(['reserve lease 60 -']);
    await send(at(1, 10, 500));
    // 10 traces in the 5 s before make 2/s: the new lease holds 30 s of that.
    expect(exact.calls.slice(1)).toEqual(['reserve lease 60 -', 'release lease 30 -']);
  });

  it.each([
    ['no contention: each lease covers 30 s of the traffic seen, or 4 batches', [], {}, [60, 204, 1632]],
    ['contention on every refill: each doubles the next', [1, 2], {}, [60, 408, 6528]],
    ['contention on every refill, maxScale 2: no more than twice', [1, 2], { maxScale: 2 }, [60, 408, 3264]],
    ['contention on the first only: the next after a calm one is halved again', [1], {}, [60, 408, 1632]],
  ])('sizes leases by the traffic seen and the contention met: %s', async (_, contended, options, sizes) => {
    const { exact, send } = limiterAt(at(0, 5), options, { minute: 1_000_000, hour: null, day: null, month: null });
    exact.contended = new Set(contended);
    // 10 traces (the probe meets contention), then a batch of 51 and one of 408, each more than the lease has left.
    for (const count of [10, 51, 408]) await send(at(0, 5), count);
    expect(exact.calls).toEqual(sizes.map((size) => `reserve lease ${size} 10:00`));
  });

  it('gives back what a closed pool did not use newest lease first, each lease no more than it holds', async () => {
    const { exact, limiter, send } = limiterAt(at(0, 5), {}, { minute: 1_000_000, hour: null, day: null, month: null });
    await send(at(0, 5), 10);
    await send(at(0, 5), 51);
    await limiter.release('acme', countersFor({ minute: 1_000_000, hour: null, day: null, month: null }, new Date(at(0, 5))), 51, 'req-2');
    await limiter.drain();
    // Leases of 60 and 204, 10 used: 204 back from the newest, 50 from the first.
    expect(exact.calls).toEqual(['reserve lease 60 10:00', 'reserve lease 204 10:00', 'release lease 204 10:00', 'release lease 50 10:00']);
  });

  it('drain() gives back the open pool and the prefetched next minute’s lease', async () => {
    const { exact, limiter, send } = limiterAt(at(0, 5));
    await send(at(0, 5));
    await send(at(0, 49, 500));
    await limiter.drain();
    expect(exact.calls.slice(2)).toEqual(['release lease 40 10:00', 'release lease 60 10:01']);
  });

  it('gives back an idle organization’s pool, then its prefetched lease, each once its own deadline passed, at another organization’s request', async () => {
    const { exact, send } = limiterAt(at(0, 5));
    await send(at(0, 5));
    await send(at(0, 49, 500));
    const acme = () => exact.calls.filter((call) => !call.startsWith('other:'));
    await send(at(0, 50), 10, 'other');
    expect(acme()).toEqual(['reserve lease 60 10:00', 'reserve lease 60 10:01']);
    for (const moment of [at(1, 10, 499), at(1, 10, 500), at(2, 10, 499)]) await send(moment, 10, 'other');
    expect(acme()).toEqual(['reserve lease 60 10:00', 'reserve lease 60 10:01', 'release lease 40 10:00']);
    await send(at(2, 10, 500), 10, 'other');
    expect(acme().slice(3)).toEqual(['release lease 60 10:01']);
  });

  it('gives a lease whose outcome is unknown back under its own id, and answers the failure', async () => {
    const { exact, send } = limiterAt(at(0, 5));
    const failure = new DependencyUnavailableError('dynamodb', 'timed out');
    exact.failLeases = failure;
    await expect(send(at(0, 5))).rejects.toBe(failure);
    expect(exact.calls).toEqual(['reserve lease 60 10:00', 'release lease 60 10:00']);
    exact.failLeases = undefined;
    await expect(send(at(0, 6))).resolves.toEqual({ allowed: true });
  });

  it('takes the next minute’s lease once while requests keep coming as it is taken, as large as the largest lease of the minute', async () => {
    const { exact, limiter, send, setNow } = limiterAt(at(0, 5));
    await send(at(0, 5), 10);
    await send(at(0, 5), 51);
    setNow(at(0, 50));
    const counters = countersFor(quotas, new Date(at(0, 50)));
    await Promise.all(['a', 'b', 'c'].map((id) => limiter.reserve('acme', counters, 10, id)));
    await limiter.drain();
    expect(exact.calls.filter((call) => call.startsWith('reserve'))).toEqual(['reserve lease 60 10:00', 'reserve lease 204 10:00', 'reserve lease 204 10:01']);
  });

  it('gives back a prefetched lease and the open pool as soon as the quotas change, before the next minute starts', async () => {
    const { exact, limiter, send, setNow } = limiterAt(at(0, 5));
    await send(at(0, 5));
    await send(at(0, 49, 500));
    setNow(at(0, 55));
    await limiter.reserve('acme', countersFor({ ...quotas, minute: 200_000 }, new Date(at(0, 55))), 10, 'raised');
    await new Promise((resolve) => setImmediate(resolve));
    // A lease under the new quotas (4 batches: nothing seen in the last 5 s) and the next minute's, then the old two go back.
    expect(exact.calls.slice(2)).toEqual(['reserve lease 40 10:00', 'reserve lease 40 10:01', 'release lease 60 10:01', 'release lease 40 10:00']);
  });

  it('admits nothing from a drained lease: the next request takes a new one', async () => {
    const { exact, limiter, send } = limiterAt(at(0, 5));
    await send(at(0, 5));
    await limiter.drain();
    await send(at(0, 6));
    expect(exact.calls).toEqual(['reserve lease 60 10:00', 'release lease 50 10:00', 'reserve lease 60 10:00']);
  });

  it('counts an organization hot after contention met by a per-request reservation: its next request leases without a probe', async () => {
    const { exact, send } = limiterAt(at(0, 5));
    exact.probeFailure = new DependencyUnavailableError('dynamodb', 'timed out');
    exact.contended = new Set([1]);
    await send(at(0, 5));
    await send(at(0, 6));
    expect(exact.calls).toEqual(['reserve req-1 10 10:00', 'reserve lease 60 10:00']);
  });

  it('passes on a probe failure that is no dependency’s (a bug) and reserves nothing', async () => {
    const { exact, send } = limiterAt(at(0, 5));
    const bug = new TypeError('not a function');
    exact.probeFailure = bug;
    await expect(send(at(0, 5))).rejects.toBe(bug);
    expect(exact.calls).toEqual([]);
  });

  it('answers the next minute with an ordinary lease when its prefetch failed, and prefetches again before the minute after', async () => {
    const { exact, send } = limiterAt(at(0, 5));
    await send(at(0, 5));
    exact.failLeases = new DependencyUnavailableError('dynamodb', 'timed out');
    await expect(send(at(0, 49, 500))).resolves.toEqual({ allowed: true });
    exact.failLeases = undefined;
    await expect(send(at(1, 0))).resolves.toEqual({ allowed: true });
    await send(at(1, 49, 500));
    expect(exact.calls.filter((call) => call.startsWith('reserve'))).toEqual([
      'reserve lease 60 10:00',
      'reserve lease 60 10:01',
      'reserve lease 40 10:01',
      'reserve lease 40 10:02',
    ]);
  });

  it('takes no next minute’s lease while the quota is too near for leases', async () => {
    const { exact, send } = limiterAt(at(0, 5));
    await send(at(0, 5));
    exact.refuseLeases = true;
    await send(at(0, 6), 51);
    // 50 are left of the lease: a batch of 10 is admitted from them, and no lease is tried for 10:01.
    await send(at(0, 49, 500));
    expect(exact.calls).toEqual(['reserve lease 60 10:00', 'reserve lease 204 10:00', 'reserve req-2 51 10:00']);
    // 10:01 leases again, and takes 10:02's ahead.
    exact.refuseLeases = false;
    await send(at(1, 0));
    await send(at(1, 49, 500));
    expect(exact.calls.slice(3)).toEqual(['reserve lease 40 10:01', 'reserve lease 40 10:02', 'release lease 40 10:00']);
  });

  it('counts an organization hot for hotForMs after the contention it met, a contended refill included', async () => {
    const { exact, send } = limiterAt(at(0, 5), { hotForMs: 10_000 });
    // The probe at 10:00:05 meets contention: hot until 10:00:15.
    await send(at(0, 5));
    await send(at(0, 14, 999));
    expect(exact.calls).toEqual(['reserve lease 60 10:00']);
    // Cooled down at 10:00:15: the lease goes back, and the next probe's contention makes it hot again.
    await send(at(0, 15));
    expect(exact.calls.slice(1)).toEqual(['reserve lease 120 10:00', 'release lease 40 10:00']);
    // 110 are left; the refill for a batch of 111 at 10:00:20 meets contention (the 3rd reserve): hot until 10:00:30, not 10:00:25.
    exact.contended = new Set([3]);
    await send(at(0, 20), 111);
    await send(at(0, 27));
    expect(exact.calls.slice(3)).toEqual(['reserve lease 444 10:00']);
  });

  it('does not count an organization hot after a per-request reservation that met no contention', async () => {
    const { exact, send } = limiterAt(at(0, 5));
    exact.probeFailure = new DependencyUnavailableError('dynamodb', 'timed out');
    await send(at(0, 5));
    await send(at(0, 6));
    expect(exact.calls).toEqual(['reserve req-1 10 10:00', 'reserve req-2 10 10:00']);
  });

  it('leases only when the smallest of the quotas is at least minQuotaForLeases', async () => {
    const { exact, send } = limiterAt(at(0, 5), {}, { minute: 9_999, hour: 1_000_000, day: null, month: 100_000_000 });
    await send(at(0, 5));
    expect(exact.calls).toEqual(['reserve req-1 10 10:00']);
  });

  it('states the most a container can hold counted but unused: two leases at their cap and two batches', () => {
    expect(leaseSlackPerContainer(60_000, 10)).toBe(2 * (3_000 + 10));
    expect(leaseSlackPerContainer(60_000, 10, { maxLeaseFraction: 0.1 })).toBe(2 * (6_000 + 10));
  });
});

describe('LeasingRateLimiter with hotAboveTracesPerSecond', () => {
  const counters = countersFor({ minute: 100_000, hour: null, day: null, month: null }, new Date(START));

  it('leases for traffic from exactly that many traces a second over the last 5 s, without contention', async () => {
    const exact = new RecordingReservations();
    let now = START;
    const limiter = new LeasingRateLimiter(exact, () => now, { hotAboveTracesPerSecond: 10 }, undefined, () => 0);
    // 49 traces 5 s ago are no longer seen; 49 now make 9.8/s: per request (the probe, which meets no contention).
    await limiter.reserve('acme', counters, 49, 'old');
    now = START + 5_000;
    await limiter.reserve('acme', counters, 49, 'req-1');
    await limiter.reserve('acme', counters, 1, 'req-2');
    expect(exact.calls).toEqual([]);
    // 50 seen: 10/s, hot. A lease of 30 s of it.
    await limiter.reserve('acme', counters, 1, 'req-3');
    expect(exact.calls).toEqual(['reserve lease 300']);
  });
});
