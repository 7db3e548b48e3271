// Load for the TypeScript SDK against the local stack: eight async tasks share one client, the
// spool on. Writes the trace ids it handed over and its final report to <out>.
// usage: tsx load-typescript.ts <traces> <out> <spool dir>   (key and address from the environment)
import { writeFileSync } from 'node:fs';
import { TraceIngest } from '../../../sdk/typescript/src/index.js';

const [total, out, spoolDir] = [Number(process.argv[2]), process.argv[3] as string, process.argv[4] as string];
const TASKS = 8;
const client = new TraceIngest({ spoolDir, maxRetrySeconds: 900, maxQueueTraces: 50_000, whenFull: 'block', blockTimeoutMs: 600_000 });
const ids: string[] = [];
// A line a second with the accounting, so the test can see the 429s come.
setInterval(() => console.log(`progress typescript-${process.pid} ${JSON.stringify(client.report())}`), 1_000).unref();

async function task(label: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    await client.trace('sdk-load', { conversationId: label, tags: ['typescript'] }, async (trace) => {
      ids.push(trace.traceId);
      await client.span('step', { kind: 'tool', input: { i } }, async () => undefined);
    });
  }
}

await Promise.all(Array.from({ length: TASKS }, (_, n) => task(`task-${n}`, Math.floor(total / TASKS))));
const report = await client.shutdown(900_000);
writeFileSync(out, JSON.stringify({ ids, report }));
