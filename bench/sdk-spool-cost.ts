// For bench/sdk-freeze.ts, in a fresh process per setting (so the garbage a setting makes is collected on its
// own time, not on the next setting's): the median µs per span of the caller's work with the spool off or on.
// Prints {"micros": …} on its last line.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Answer, TraceIngest, type Transport } from '../sdk/typescript/src/index.js';
import { percentile } from './engines-util.js';
import { SPANS_PER_TRACE, sdkBenchTrace } from './sdk-workload.js';

const TRACES = 500;
const ROUNDS = 7;
const sync = process.argv[2] as 'off' | 'interval' | 'write' | 'fsync';
const accepted: Transport = { post: async (): Promise<Answer> => ({ status: 200, headers: {}, body: { accepted: 0, rejected: 0, errors: [] } }) };
const directory = mkdtempSync(path.join(tmpdir(), 'bench-spool-cost-'));
const spool = sync === 'off' ? {} : { spoolDir: directory, spoolSync: sync };
const client = new TraceIngest({ apiKey: 'tik_bench', transport: accepted, serverless: true, maxQueueTraces: TRACES * 2, logger: () => undefined, ...spool });
const samples: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const started = performance.now();
  for (let n = 0; n < TRACES; n++) sdkBenchTrace(client, n);
  samples.push(((performance.now() - started) * 1000) / (TRACES * SPANS_PER_TRACE));
  await client.flush();
}
await client.shutdown(0);
rmSync(directory, { recursive: true, force: true });
console.log(JSON.stringify({ micros: percentile(samples, 50) }));
