// The TypeScript worker of bench/sdk-freeze-harness.ts (its header gives the protocol): one simulated Lambda
// execution environment. For each line on stdin, a handler hands over 10 traces of one span through
// client.wrapHandler (serverless, spoolSync "write"); then one JSON line: the trace ids, what was still pending
// after the wrapper's flush, how long that flush took, and each spool write.
import { createInterface } from 'node:readline';
import { TraceIngest } from '../sdk/typescript/src/index.js';
import { Spool } from '../sdk/typescript/src/spool.js';

const [baseUrl, apiKey, spoolDir] = process.argv.slice(2) as [string, string, string];
let writes: number[] = [];
for (const method of ['trace', 'batch', 'done'] as const) {
  const original = Spool.prototype[method] as (...args: unknown[]) => void;
  (Spool.prototype[method] as unknown) = function timed(this: Spool, ...args: unknown[]): void {
    const started = performance.now();
    try {
      original.apply(this, args);
    } finally {
      writes.push(performance.now() - started);
    }
  };
}

const client = new TraceIngest({ apiKey, baseUrl, serverless: true, spoolDir, spoolSync: 'write', logger: () => undefined });
let flushStarted = 0;
const handler = client.wrapHandler(async (event: string) => {
  const ids: string[] = [];
  for (let n = 0; n < 10; n++) {
    ids.push(
      client.trace('invocation', { conversationId: event }, (trace) => {
        trace.span('step', { kind: 'llm', model: 'gpt-4o', input: { n }, inputTokens: 10 }, (span) => (span.output = { text: 'ok' }));
        return trace.traceId;
      }),
    );
  }
  flushStarted = performance.now(); // the wrapper's flush starts when this returns
  return ids;
});

for await (const line of createInterface({ input: process.stdin })) {
  writes = [];
  const ids = await handler(line);
  const flushMs = performance.now() - flushStarted;
  const { pending } = client.report();
  process.stdout.write(`${JSON.stringify({ ids, pending, flush_ms: flushMs, spool_ms: writes })}\n`);
}
