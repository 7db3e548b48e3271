import { DynamoDbRateLimiter } from '../../../lambda/shared/adapters/dynamodb-rate-limiter.js';
import { DEFAULT_LEASE_OPTIONS, LeasingRateLimiter } from '../../../lambda/shared/adapters/leasing-rate-limiter.js';
import { countersFor } from '../../../lambda/shared/domain/rate-windows.js';
import type { Quotas } from '../../../lambda/shared/domain/tenancy.js';
import { RATE_TABLE_NAME, simulateHotOrg } from '../../../scripts/local/dynamo/hot-org-simulation.js';
import { DynamoModel } from '../../../scripts/local/dynamo/model.js';
import { seededRandom, VirtualClock } from '../../../scripts/local/dynamo/virtual-clock.js';
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
    // 300 req/s of 10 traces against 60,000 per minute: the quota binds after ~20 s of every minute.
    const quotas: Quotas = { minute: 60_000, hour: 10_000_000, day: null, month: 10_000_000 };
    const result = await simulateHotOrg({
      design: 'leases',
      ratePerOrg: 300,
      orgs: 1,
      tracesPerRequest: 10,
      durationMs: 70_000,
      rampMs: 5_000,
      quotas,
      containerLifetimeMs: 15_000,
      drainAtEnd: true,
      model: { lostAnswerRate: 0.02 },
    });
    expect(result.limited).toBeGreaterThan(0);
    expect(result.deadContainers).toBeGreaterThan(0);
    const windows = windowItems(result.model, 'org-0');
    for (const minute of windows.filter((w) => w.sk.startsWith('minute#'))) expect(minute.count).toBeLessThanOrEqual(60_000);
    // Counted vs accepted: never under; over by at most one lease (5 % of the minute quota) per dead container.
    const accepted = result.acceptedTraces.get('org-0') ?? 0;
    const month = monthCount(result.model, 'org-0');
    expect(month).toBeGreaterThanOrEqual(accepted);
    expect(month - accepted).toBeLessThanOrEqual(result.deadContainers * DEFAULT_LEASE_OPTIONS.maxLeaseFraction * 60_000);
  }, 60_000);

  it('without dead containers or lost answers, counters end equal to accepted (every lease given back)', async () => {
    const quotas: Quotas = { minute: 5_000_000, hour: null, day: null, month: 1e12 };
    const result = await simulateHotOrg({ design: 'leases', ratePerOrg: 400, orgs: 1, tracesPerRequest: 10, durationMs: 30_000, rampMs: 5_000, quotas, drainAtEnd: true });
    expect(result.p503).toBe(0);
    expect(monthCount(result.model, 'org-0')).toBe(result.acceptedTraces.get('org-0'));
  }, 60_000);

  it('give-back on a publish failure is exact, inside the lease and after it closed', async () => {
    const clock = new VirtualClock(START);
    const model = new DynamoModel(clock, { random: seededRandom(2) });
    const limiter = new LeasingRateLimiter(new DynamoDbRateLimiter(model.client(), RATE_TABLE_NAME, PATIENT, clock.sleep), clock.now, {
      hotAboveTracesPerSecond: 10,
    });
    const quotas: Quotas = { minute: 100_000, hour: null, day: null, month: 1e9 };
    const run = async <T>(work: Promise<T>) => {
      await clock.run();
      return work;
    };
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
