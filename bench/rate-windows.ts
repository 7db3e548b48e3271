import { randomUUID } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { DynamoDBClient, GetItemCommand, TransactionCanceledException, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { DEFAULT_RATE_BACKOFF, DynamoDbRateLimiter } from '../lambda/ingest/adapters/rate/dynamodb-rate-limiter.js';
import { DependencyUnavailableError } from '../lambda/shared/domain/errors.js';
import { countersFor } from '../lambda/shared/domain/rate-windows.js';
import type { Quotas } from '../lambda/shared/domain/tenancy.js';
import { sleep as realSleep } from '../lambda/shared/runtime/backoff.js';
import { rateKeys } from '../lambda/shared/tables.js';
import { startDynamoDbLocal } from '../devkit/engines/engines.js';
import { createTables, localClientConfig } from '../devkit/engines/provision.js';
import { percentile, round, withCleanup } from './engines-util.js';
import type { BenchResult } from './types.js';

/**
 * Rate windows against DynamoDB Local: the real `DynamoDbRateLimiter` (one 4-item
 * `TransactWriteItems` per batch, its real backoff policy and sleeps) driven by WORKERS concurrent
 * loops for a fixed time, for one hot organization and spread over 100 organizations. Baseline in the
 * same run: one unconditional `UpdateItem ADD` per request on the same organizations' minute item, at
 * the same concurrency, so the ratio shows what the conditional four-item transaction costs.
 */

const WORKERS = 16;
const SCENARIO_MS = 6_000;
const WARMUP_MS = 1_500;
const TRACES_PER_BATCH = 10;
const SPREAD_ORGS = 100;
/** Every window counted (so every transaction has four items) and never full. */
const QUOTAS: Quotas = { minute: 1e12, hour: 1e12, day: 1e12, month: 1e12 };
const TABLES = { tenancy: 'bench-tenancy', rate: 'bench-rate' };

interface CallTally {
  /** `client.send` calls (one per limiter attempt). */
  sends: number;
  /** HTTP attempts, the SDK's own retries included. */
  attempts: number;
  /** Transactions cancelled with at least one `TransactionConflict` reason. */
  conflicts: number;
  /** Other errors the call ended with. */
  errors: number;
}

const newTally = (): CallTally => ({ sends: 0, attempts: 0, conflicts: 0, errors: 0 });

/** Counts what the DynamoDB client sends and how each call ends, per command, without changing it. */
function instrument(client: DynamoDBClient): Map<string, CallTally> {
  const tallies = new Map<string, CallTally>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? 'unknown';
      let tally = tallies.get(name);
      if (!tally) tallies.set(name, (tally = newTally()));
      tally.sends++;
      try {
        const result = await next(args);
        tally.attempts += (result.output as { $metadata?: { attempts?: number } }).$metadata?.attempts ?? 1;
        return result;
      } catch (error) {
        tally.attempts += (error as { $metadata?: { attempts?: number } }).$metadata?.attempts ?? 1;
        if (error instanceof TransactionCanceledException && (error.CancellationReasons ?? []).some((r) => r.Code === 'TransactionConflict')) {
          tally.conflicts++;
        } else {
          tally.errors++;
        }
        throw error;
      }
    },
    { step: 'initialize', name: 'benchCallTally' },
  );
  return tallies;
}

interface ScenarioOutcome {
  ops: number;
  perSecond: number;
  /** Operations that ended in the 503 of the handler (limiter gave up after its retries). */
  unavailable: number;
  /** Quota verdicts (429): none expected with these quotas. */
  limited: number;
  otherErrors: number;
  retries: number;
  tally: CallTally;
  p50: number;
  p99: number;
}

type Operation = (orgId: string) => Promise<'ok' | 'limited'>;

async function drive(
  tallies: Map<string, CallTally>,
  command: string,
  orgIds: readonly string[],
  durationMs: number,
  operation: Operation,
  retries: { count: number },
): Promise<ScenarioOutcome> {
  tallies.clear();
  retries.count = 0;
  const latencies: number[] = [];
  let ops = 0;
  let unavailable = 0;
  let limited = 0;
  let otherErrors = 0;
  let firstError: unknown;
  const started = performance.now();
  const deadline = started + durationMs;
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, worker) => {
      for (let i = 0; performance.now() < deadline; i++) {
        const orgId = orgIds[(worker + i * WORKERS) % orgIds.length] as string;
        const t0 = performance.now();
        try {
          if ((await operation(orgId)) === 'limited') limited++;
          else ops++;
        } catch (error) {
          if (error instanceof DependencyUnavailableError) unavailable++;
          else {
            otherErrors++;
            firstError ??= error;
          }
        }
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsedS = (performance.now() - started) / 1000;
  if (otherErrors > 0 && ops === 0) throw new Error(`rate-window bench: every ${command} failed`, { cause: firstError });
  return {
    ops,
    perSecond: ops / elapsedS,
    unavailable,
    limited,
    otherErrors,
    retries: retries.count,
    tally: tallies.get(command) ?? newTally(),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

/** Reserves/s with the real limiter vs single UpdateItem/s, hot org and 100 orgs, on DynamoDB Local. */
export async function runRateWindowBench(): Promise<BenchResult[]> {
  return withCleanup(async (defer) => {
    const loadAverage = loadavg()[0]?.toFixed(1) ?? '?';
    const engine = await startDynamoDbLocal();
    defer(() => engine.stop());
    // The handler's client settings (maxAttempts 3); the bench adds only counting.
    const client = new DynamoDBClient({ ...localClientConfig(engine.endpoint), maxAttempts: 3 });
    defer(() => client.destroy());
    await createTables(client, TABLES);
    const tallies = instrument(client);

    const retries = { count: 0 };
    const limiter = new DynamoDbRateLimiter(client, TABLES.rate, DEFAULT_RATE_BACKOFF, (ms) => {
      retries.count++;
      return realSleep(ms);
    });
    const reserve: Operation = async (orgId) => {
      const decision = await limiter.reserve(orgId, countersFor(QUOTAS, new Date()), TRACES_PER_BATCH, randomUUID());
      return decision.allowed ? 'ok' : 'limited';
    };
    const update: Operation = async (orgId) => {
      const minute = countersFor(QUOTAS, new Date())[0]!;
      const { pk, sk } = rateKeys.window(orgId, minute.window, minute.windowStart);
      await client.send(
        new UpdateItemCommand({
          TableName: TABLES.rate,
          Key: { pk: { S: pk }, sk: { S: sk } },
          UpdateExpression: 'ADD #count :n',
          ExpressionAttributeNames: { '#count': 'count' },
          ExpressionAttributeValues: { ':n': { N: String(TRACES_PER_BATCH) } },
        }),
      );
      return 'ok';
    };

    const hot = ['bench-hot'];
    const spread = Array.from({ length: SPREAD_ORGS }, (_, i) => `bench-org-${String(i).padStart(3, '0')}`);

    // Sum of the month counters of these orgs: the transactions alone write them (the baseline
    // touches the minute item), so it must equal traces × reserves accepted, or something counted twice.
    const monthTotal = async (orgIds: readonly string[]) => {
      const month = countersFor(QUOTAS, new Date())[3]!;
      let total = 0;
      for (const orgId of orgIds) {
        const { pk, sk } = rateKeys.window(orgId, month.window, month.windowStart);
        const { Item } = await client.send(new GetItemCommand({ TableName: TABLES.rate, Key: { pk: { S: pk }, sk: { S: sk } }, ConsistentRead: true }));
        total += Number(Item?.['count']?.N ?? 0);
      }
      return total;
    };

    // The JVM compiles its hot paths during the first seconds; both operations warm up before timing.
    await drive(tallies, 'UpdateItemCommand', spread, WARMUP_MS / 2, update, retries);
    const warmup = await drive(tallies, 'TransactWriteItemsCommand', spread, WARMUP_MS / 2, reserve, retries);

    const results: BenchResult[] = [];
    for (const [label, orgIds] of [
      ['1 hot org', hot],
      [`${SPREAD_ORGS} orgs`, spread],
    ] as const) {
      const baseline = await drive(tallies, 'UpdateItemCommand', orgIds, SCENARIO_MS, update, retries);
      const tx = await drive(tallies, 'TransactWriteItemsCommand', orgIds, SCENARIO_MS, reserve, retries);
      const conflictRate = tx.tally.sends === 0 ? 0 : tx.tally.conflicts / tx.tally.sends;
      const expected = TRACES_PER_BATCH * (tx.ops + (orgIds === spread ? warmup.ops : 0));
      const counted = await monthTotal(orgIds);
      results.push(
        {
          group: 'rate-windows',
          metric: `accepted reserves/s, ${label}, ${WORKERS} workers (TransactWriteItems: 4 windows + reservation marker)`,
          value: round(tx.perSecond),
          unit: 'reserves/s',
          baseline: round(baseline.perSecond),
          ratio: round(tx.perSecond / baseline.perSecond, 2),
          note:
            `DynamoDB Local (one JVM on this ${cpus().length}-CPU machine, load average ${loadAverage} when the bench started) is not DynamoDB: its locking, latency and throughput differ, ` +
            `and AWS limits do not apply (on AWS a transactional write costs 2 WCU per item and an item or partition takes at most ` +
            `1,000 WCU/s, so one org's reserves cap near 500/s on its minute item, ~125/s while its four items share a partition). Baseline: one unconditional UpdateItem ADD per request on the same ` +
            `orgs' minute item, same concurrency, same run; ratio = reserves/s ÷ UpdateItem/s. ${TRACES_PER_BATCH} traces per reserve; ` +
            `reserve latency p50 ${round(tx.p50)} ms / p99 ${round(tx.p99)} ms (UpdateItem p50 ${round(baseline.p50)} / p99 ${round(baseline.p99)} ms); ` +
            `${tx.ops} reserves, ${tx.limited} quota verdicts, ${tx.otherErrors + baseline.otherErrors} other errors; ` +
            `month counters ${counted === expected ? 'consistent' : 'INCONSISTENT'} (${counted} traces counted, ${expected} accepted)`,
        },
        {
          group: 'rate-windows',
          metric: `transaction conflict rate, ${label}`,
          value: round(conflictRate * 100, 2),
          unit: '%',
          note:
            `TransactWriteItems calls cancelled with a TransactionConflict reason ÷ calls sent (${tx.tally.conflicts} of ${tx.tally.sends}; ` +
            `${tx.tally.attempts} HTTP attempts incl. SDK retries, ${tx.tally.errors} other errors); limiter backoff retries: ${tx.retries}. ` +
            (tx.tally.conflicts === 0
              ? `DynamoDB Local applied ${WORKERS} overlapping transactions one after another without cancelling any; DynamoDB `
              : `DynamoDB `) +
            `cancels transactions that overlap on an item, so this is not a prediction of the rate on AWS`,
        },
        {
          group: 'rate-windows',
          metric: `reserves failed after retries (the handler's 503), ${label}`,
          value: tx.unavailable,
          unit: 'requests',
          note: `of ${tx.ops + tx.unavailable + tx.limited + tx.otherErrors} reserve calls in ${SCENARIO_MS / 1000} s (${DEFAULT_RATE_BACKOFF.maxAttempts} attempts, ${DEFAULT_RATE_BACKOFF.baseDelayMs}–${DEFAULT_RATE_BACKOFF.maxDelayMs} ms full jitter)`,
        },
      );
    }
    return results;
  });
}
