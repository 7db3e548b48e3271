// One simulated Lambda execution environment for bench/sdk-freeze.ts: for each line "invoke" on stdin, runs a handler
// that hands over 10 traces through client.wrapHandler (serverless, spoolSync "write"), and prints what its flush
// returned: the trace ids, what was still pending, how long the flush took, and each spool write.
import { createInterface } from 'node:readline';
import { TraceIngest } from '../sdk/typescript/src/index.js';
import { Spool } from '../sdk/typescript/src/spool.js';

const [baseUrl, spoolDir] = process.argv.slice(2) as [string, string];
let spoolMs = 0;
let writes: number[] = [];
for (const method of ['trace', 'batch', 'done'] as const) {
  const original = Spool.prototype[method] as (...args: unknown[]) => void;
  (Spool.prototype[method] as unknown) = function timed(this: Spool, ...args: unknown[]): void {
    const started = performance.now();
    try {
      original.apply(this, args);
    } finally {
      const took = performance.now() - started;
      spoolMs += took;
      writes.push(took);
    }
  };
}

const client = new TraceIngest({ apiKey: 'tik_bench', baseUrl, serverless: true, spoolDir, spoolSync: 'write', logger: () => undefined });
let flushMs = 0;
const handler = client.wrapHandler(async (invocation: number) => {
  const ids: string[] = [];
  for (let n = 0; n < 10; n++) ids.push(client.trace('invocation', { attributes: { invocation, n } }, (trace) => trace.traceId));
  flushMs = performance.now(); // the wrapper's flush starts when this returns
  return ids;
});

let invocation = 0;
for await (const line of createInterface({ input: process.stdin })) {
  if (line !== 'invoke') continue;
  spoolMs = 0;
  writes = [];
  const ids = await handler(invocation++);
  flushMs = performance.now() - flushMs;
  const { pending } = client.report();
  process.stdout.write(`${JSON.stringify({ ids, pending, flushMs, spoolMs, writes })}\n`);
}
