// Installed-package smoke test of the CommonJS build: require() it, send a trace, and check that the ESM build
// loaded beside it shares the trace context (one program may load both).
const { createServer } = require('node:http');
const { gunzipSync } = require('node:zlib');
const { TraceIngest, currentTrace } = require('@trace-ingest/sdk');

async function main() {
  const seen = [];
  const server = createServer((request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      const body = JSON.parse(gunzipSync(Buffer.concat(chunks)).toString('utf8'));
      seen.push(...body.traces);
      response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ accepted: body.traces.length, rejected: 0, errors: [] }));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const esm = await import('@trace-ingest/sdk');
  if (esm.TraceIngest === TraceIngest) throw new Error('commonjs smoke: require() gave the ESM build');
  const client = new TraceIngest({ apiKey: 'tik_smoke', baseUrl: `http://127.0.0.1:${server.address().port}` });
  const shared = client.trace('smoke-cjs', (trace) => esm.currentTrace() === trace && currentTrace() === trace);
  const report = await client.shutdown(10_000);
  server.close();
  if (!shared) throw new Error('commonjs smoke: the ESM build does not see a trace opened through the CommonJS build');
  if (report.sent !== 1 || seen[0]?.root_span_name !== 'smoke-cjs') throw new Error(`commonjs smoke failed: ${JSON.stringify(report)}`);
  console.log(`typescript commonjs smoke ok on Node ${process.versions.node}`);
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
