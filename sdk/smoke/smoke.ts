// Installed-package smoke test: typechecked and run from a scratch project that installed the
// packed tarball, against a tiny local HTTP server standing in for the service.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { TraceIngest, type DeliveryReport } from '@trace-ingest/sdk';

const seen: { traces: { session_id: string }[] }[] = [];
const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const body = JSON.parse(gunzipSync(Buffer.concat(chunks)).toString('utf8')) as { traces: { session_id: string }[] };
    seen.push(body);
    response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ accepted: body.traces.length, rejected: 0, errors: [] }));
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const client = new TraceIngest({ apiKey: 'tik_smoke', baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
await client.trace('smoke', { conversationId: 'c-1' }, (trace) => trace.span('step', { kind: 'tool', input: { x: 1 } }, () => undefined));
const report: DeliveryReport = await client.shutdown(10_000);
if (report.sent !== 1 || report.pending !== 0 || seen[0]?.traces[0]?.session_id !== 'c-1') throw new Error(`smoke failed: ${JSON.stringify(report)}`);
console.log(`typescript smoke ok on Node ${process.versions.node}`);
server.close();
