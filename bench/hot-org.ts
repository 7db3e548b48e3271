import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyResult } from 'aws-lambda';
import type { Quotas } from '../lambda/shared/domain/tenancy.js';
import { type Design, simulateHotOrg, type SimulationResult } from '../devkit/dynamo/hot-org-simulation.js';
import { startDynamoProxy } from '../devkit/dynamo/proxy.js';
import { startDynamoDbLocal } from '../devkit/engines/engines.js';
import { createTables, localClientConfig } from '../devkit/engines/provision.js';
import { fakeTenancy, rateWindowsOnlyIngest } from '../devkit/fakes/fake-tenancy.js';
import { gatewayEvent, lambdaContext, liveBatch } from '../devkit/builders/trace-builders.js';
import { round, withCleanup } from './engines-util.js';
import type { BenchResult } from './types.js';

/**
 * Hot organizations in the DynamoDB model (conflicts with a 15 ms hold plus up to 5 ms jitter,
 * 1,000 WCU/s per item and partition) on a virtual clock: today's per-request transaction and quota
 * leases side by side, same seed, same arrivals. Open-loop Poisson arrivals of 10-trace requests;
 * the offered rate ramps up over 10 s (not measured), then 30 s are measured, across a minute
 * rollover. Quotas are far above the offered load, so every 429 or 503 is the limiter's fault.
 */

const RATES = [25, 50, 100, 200, 500, 1_000, 2_000];
const DESIGNS: Design[] = ['per-request', 'leases'];
const QUOTAS: Quotas = { minute: 5_000_000, hour: 1e12, day: 1e12, month: 1e12 };
const BASE = { tracesPerRequest: 10, durationMs: 30_000, rampMs: 10_000, quotas: QUOTAS, seed: 7 };

/** The row `bench/results.json` keeps per design and rate. */
export interface HotOrgRow extends BenchResult {
  design: Design;
  offered: number;
  accepted: number;
  p503: number;
  p429: number;
  p50_ms: number;
  p99_ms: number;
  wcu_per_request: number;
}

function row(label: string, r: SimulationResult, ratePerOrg: number): HotOrgRow {
  return {
    group: 'hot-org',
    metric: `${label} ${r.design} @ ${ratePerOrg} req/s`,
    value: round(r.acceptedPerSecond, 1),
    unit: 'accepted req/s',
    design: r.design,
    offered: round(r.offeredPerSecond, 1),
    accepted: round(r.acceptedPerSecond, 1),
    p503: round(r.p503, 2),
    p429: round(r.p429, 2),
    p50_ms: round(r.p50Ms, 1),
    p99_ms: round(r.p99Ms, 1),
    wcu_per_request: round(r.wcuPerRequest, 2),
    note: `503 ${round(r.p503, 2)} %, 429 ${round(r.p429, 2)} %, p50 ${round(r.p50Ms, 1)} ms, p99 ${round(r.p99Ms, 1)} ms, ${round(r.wcuPerRequest, 2)} WCU/request, ${r.containers} containers`,
  };
}

export async function runHotOrgBench(): Promise<BenchResult[]> {
  const rows: HotOrgRow[] = [];
  for (const rate of RATES) {
    for (const design of DESIGNS) {
      rows.push(row('1 org', await simulateHotOrg({ ...BASE, design, ratePerOrg: rate, orgs: 1 }), rate));
    }
  }
  for (const design of DESIGNS) {
    rows.push(row('100 orgs', await simulateHotOrg({ ...BASE, design, ratePerOrg: 10, orgs: 100 }), 10));
  }
  console.table(rows.map(({ metric, offered, accepted, p503, p429, p50_ms, p99_ms, wcu_per_request }) => ({ metric, offered, accepted, p503, p429, p50_ms, p99_ms, wcu_per_request })));
  return [...rows, ...(await runHotOrgEngineBench())];
}

const ENGINE_CONTAINERS = 12;
const ENGINE_RUN_MS = 6_000;

/**
 * The real ingest handler (composeIngest, its real DynamoDbRateLimiter / LeasingRateLimiter) through
 * the conflict proxy over DynamoDB Local, tenancy and Kinesis faked: ENGINE_CONTAINERS handler
 * instances ("containers"), each serving one request at a time for ENGINE_RUN_MS, one organization.
 * Closed-loop, so the rate is what this machine (two cores shared with DynamoDB Local) sustains.
 */
async function runEngineScenario(endpoint: string, rateLeases: boolean): Promise<{ ok: number; p503: number; perSecond: number; p99: number }> {
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  const { apiKey, tenancy } = fakeTenancy(`engine-${rateLeases ? 'leases' : 'per-request'}-${Date.now()}`, QUOTAS);
  const client = new DynamoDBClient({ ...localClientConfig(endpoint), maxAttempts: 3 });
  const handlers = Array.from({ length: ENGINE_CONTAINERS }, () =>
    rateWindowsOnlyIngest({ dynamodb: client, rateTable: ENGINE_TABLES.rate, tenancy, rateLeases, serviceName: 'bench' }),
  );
  let ok = 0;
  let unavailable = 0;
  let sent = 0;
  const latencies: number[] = [];
  const deadline = performance.now() + ENGINE_RUN_MS;
  await Promise.all(
    handlers.map(async (handler) => {
      while (performance.now() < deadline) {
        const body = JSON.stringify(liveBatch(10));
        const t0 = performance.now();
        const response = (await handler(gatewayEvent({ apiKey, body, requestId: randomUUID() }), lambdaContext)) as APIGatewayProxyResult;
        latencies.push(performance.now() - t0);
        sent++;
        if (response.statusCode === 200) ok++;
        else if (response.statusCode === 503) unavailable++;
        else throw new Error(`hot-org engine bench: unexpected ${response.statusCode} ${response.body}`);
      }
    }),
  );
  client.destroy();
  latencies.sort((a, b) => a - b);
  return { ok, p503: (100 * unavailable) / Math.max(1, sent), perSecond: ok / (ENGINE_RUN_MS / 1000), p99: latencies[Math.ceil(0.99 * latencies.length) - 1] ?? 0 };
}

const ENGINE_TABLES = { tenancy: 'hot-bench-tenancy', rate: 'hot-bench-rate' };

/** Old vs new on the real engines: rows `real engines <design>`. */
export async function runHotOrgEngineBench(): Promise<BenchResult[]> {
  return withCleanup(async (defer) => {
    const engine = await startDynamoDbLocal();
    defer(() => engine.stop());
    const admin = new DynamoDBClient(localClientConfig(engine.endpoint));
    defer(() => admin.destroy());
    await createTables(admin, ENGINE_TABLES);
    const proxy = await startDynamoProxy(engine.endpoint);
    defer(() => proxy.stop());
    const rows: BenchResult[] = [];
    for (const rateLeases of [false, true]) {
      const r = await runEngineScenario(proxy.endpoint, rateLeases);
      rows.push({
        group: 'hot-org',
        metric: `real engines (handler → conflict proxy → DynamoDB Local), 1 org, ${ENGINE_CONTAINERS} containers, ${rateLeases ? 'leases' : 'per-request'}`,
        value: round(r.perSecond, 1),
        unit: 'accepted req/s',
        note: `503 ${round(r.p503, 2)} %, p99 ${round(r.p99, 1)} ms; closed loop, what this machine sustains`,
      });
    }
    console.table(rows.map(({ metric, value, note }) => ({ metric, value, note })));
    return rows;
  });
}
