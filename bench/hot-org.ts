import { type Design, simulateHotOrg, type SimulationResult } from '../scripts/local/dynamo/hot-org-simulation.js';
import type { Quotas } from '../lambda/shared/domain/tenancy.js';
import { round } from './engines-util.js';
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
  return rows;
}
