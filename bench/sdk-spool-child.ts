// For bench/sdk-freeze.ts: hands traces of 8 spans over without end (background mode, the spool on), printing
// "handed <epoch ms> <ids…>" after each group of 5 returns, until the bench kills it with SIGKILL.
import { TraceIngest } from '../sdk/typescript/src/index.js';

const [baseUrl, spoolDir, spoolSync] = process.argv.slice(2) as [string, string, 'interval' | 'write'];
const client = new TraceIngest({ apiKey: 'tik_bench', baseUrl, spoolDir, spoolSync, flushIntervalMs: 20, maxBatchTraces: 50, logger: () => undefined });
for (let n = 0; ; n++) {
  const ids: string[] = [];
  for (let k = 0; k < 5; k++) {
    ids.push(
      client.trace('support-agent', { conversationId: `conv-${n % 100}` }, (trace) => {
        for (let s = 0; s < 8; s++) trace.span(`step-${s}`, { kind: 'tool', input: { step: s } }, (span) => (span.output = { text: 'done', step: s }));
        return trace.traceId;
      }),
    );
  }
  process.stdout.write(`handed ${Date.now()} ${ids.join(' ')}\n`);
  await new Promise((resolve) => setTimeout(resolve, n % 3));
}
