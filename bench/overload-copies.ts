import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbTenancyStore } from '../lambda/ingest/core/tenancy/dynamodb-tenancy-store.js';
import { createApiKey, createOrganization } from '../scripts/admin/commands.js';
import { startLocalStack } from '../devkit/local-stack/local-stack.js';
import { LOCAL_NAMES, localPaths } from '../devkit/local-stack/local-state.js';
import { localClientConfig } from '../devkit/engines/provision.js';
import { queryLanded } from '../scripts/local/query.js';
import type { BenchResult } from './types.js';

/**
 * Issue 18 item 6: copies made under overload. 80 batches of 200–500 traces (3 spans each) at concurrency 30
 * through the local stack's HTTP gateway, compaction off; once the landing has drained, raw trace rows ÷ the
 * distinct traces landed. Every row beyond one per trace is a copy: a PutRecords resent after a timeout, or a
 * request that went on publishing after it had answered.
 */
const BATCHES = 80;
const CONCURRENCY = 30;

/** A batch of `size` traces of 3 spans each, timestamped now, as the load generators send it. */
export function loadBatchBody(size: number): string {
  const now = Date.now();
  const traces = Array.from({ length: size }, (_, t) => ({
    trace_id: randomUUID(),
    timestamp: new Date(now - t).toISOString(),
    root_span_name: 'agent',
    spans: [0, 1, 2].map((s) => ({ timestamp: new Date(now - t + s).toISOString(), name: `step-${s}`, input: '{"q":"x"}', attributes: '{"tags":["load"]}' })),
  }));
  return JSON.stringify({ traces });
}

/** An organization without quotas on the local stack's tenancy table, and a key of it. */
export async function unlimitedOrganizationKey(dynamodbEndpoint: string, prefix: string): Promise<string> {
  const dynamodb = new DynamoDBClient(localClientConfig(dynamodbEndpoint));
  try {
    const deps = { store: new DynamoDbTenancyStore(dynamodb, LOCAL_NAMES.tables.tenancy), now: () => new Date() };
    const org = `${prefix}-${randomUUID().slice(0, 8)}`;
    await createOrganization(deps, org, { overrides: { minute: null, hour: null, day: null, month: null } });
    return (await createApiKey(deps, org)).api_key;
  } finally {
    dynamodb.destroy();
  }
}

export interface OverloadCopies {
  statuses: Record<string, number>;
  answered200Traces: number;
  landedTraces: number;
  rawRows: number;
  seconds: number;
}

export async function measureOverloadCopies(): Promise<OverloadCopies> {
  const stateDir = mkdtempSync(path.join(tmpdir(), 'overload-copies-'));
  const stack = await startLocalStack({ paths: localPaths(stateDir), port: 0, compactionIntervalMs: 0, poller: { idlePollMs: 100, batchingWindowMs: 500 } });
  try {
    const apiKey = await unlimitedOrganizationKey(stack.endpoints.dynamodb, 'overload');

    const statuses: Record<string, number> = {};
    let answered200Traces = 0;
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < BATCHES) {
          const i = next++;
          const size = 200 + ((i * 37) % 301);
          const response = await fetch(`${stack.endpoints.api}/v1/traces/ingest`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', 'X-API-Key': apiKey },
            body: loadBatchBody(size),
            signal: AbortSignal.timeout(120_000),
          });
          const answer = (await response.json()) as { accepted?: number; may_have_been_accepted?: boolean };
          const label = response.status === 503 && answer.may_have_been_accepted ? '503 may_have_been_accepted' : String(response.status);
          statuses[label] = (statuses[label] ?? 0) + 1;
          if (response.status === 200) answered200Traces += answer.accepted ?? 0;
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;

    // Drained when the raw count has not moved for 10 s.
    const data = { s3Directory: stack.endpoints.s3Directory, bucket: LOCAL_NAMES.bucket };
    let last = -1;
    let counts = { rawRows: 0, landedTraces: 0 };
    for (let still = 0; still < 4; ) {
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      const [result] = await queryLanded('SELECT count(*)::INTEGER AS raw, count(DISTINCT trace_id)::INTEGER AS traces FROM traces_raw', data);
      const row = result?.rows[0] ?? {};
      counts = { rawRows: Number(row.raw ?? 0), landedTraces: Number(row.traces ?? 0) };
      still = counts.rawRows === last ? still + 1 : 0;
      last = counts.rawRows;
    }
    return { statuses, answered200Traces, ...counts, seconds };
  } finally {
    await stack.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

/** `npm run bench -- overload-copies` (several minutes on the local stack). */
export async function runOverloadCopiesBench(): Promise<BenchResult[]> {
  const m = await measureOverloadCopies();
  const ratio = m.landedTraces === 0 ? 0 : Math.round((m.rawRows / m.landedTraces) * 100) / 100;
  return [
    {
      group: 'overload-copies',
      metric: `raw trace rows ÷ traces landed, ${BATCHES} batches of 200–500 traces at concurrency ${CONCURRENCY} on the local stack`,
      value: ratio,
      unit: 'x',
      note: `${m.rawRows} raw rows for ${m.landedTraces} traces (${m.answered200Traces} answered 200); answers ${JSON.stringify(m.statuses)}; load ${m.seconds.toFixed(0)} s; compaction off`,
    },
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(JSON.stringify(await measureOverloadCopies()));
