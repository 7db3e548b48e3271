// Run by bench/sdk.ts in a fresh process with --expose-gc: heap bytes per trace held in the
// TypeScript SDK's queue. Prints {"bytesPerTrace": n, "traces": n}.
import { TraceIngest } from '../sdk/typescript/src/index.js';
import { sdkBenchTrace } from './sdk-workload.js';

const TRACES = 20_000;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
const never = { post: async () => ({ status: 500, headers: {}, body: null }) };
const client = new TraceIngest({ apiKey: 'tik_bench', transport: never, serverless: true, maxQueueTraces: TRACES });
sdkBenchTrace(client, 0); // warm every code path before the baseline
await client.flush(0);
gc();
const before = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
for (let i = 1; i <= TRACES; i++) sdkBenchTrace(client, i);
gc();
const after = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
const queued = client.report().pending;
console.log(JSON.stringify({ bytesPerTrace: (after - before) / queued, traces: queued }));
