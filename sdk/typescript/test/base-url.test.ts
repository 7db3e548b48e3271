import assert from 'node:assert/strict';
import { it } from 'node:test';
import { TraceIngest } from '../src/index.js';
import { FakeService } from './fake-service.js';

function refusal(baseUrl: string): string {
  try {
    new TraceIngest({ apiKey: 'tik_x', baseUrl });
  } catch (error) {
    assert.ok(error instanceof TypeError);
    return error.message;
  }
  assert.fail(`${baseUrl} was taken`);
}

it('refuses a base URL that already names a route, giving the URL to use', () => {
  assert.equal(refusal('https://api.example.com/v1/traces/ingest'), 'baseUrl "https://api.example.com/v1/traces/ingest" already names the route /v1/traces/ingest: use "https://api.example.com" (the SDK adds /v1/traces/ingest)');
  assert.match(refusal('https://api.example.com/prod/v1/traces/ingest/'), /: use "https:\/\/api\.example\.com\/prod" /);
  assert.match(refusal('http://localhost:3000/otel/v1/traces'), /already names the route \/otel\/v1\/traces: use "http:\/\/localhost:3000" /);
});

it('refuses a base URL without a scheme, giving the URL to use', () => {
  assert.equal(refusal('api.example.com'), 'baseUrl "api.example.com" has no scheme: use "https://api.example.com"');
  assert.equal(refusal('localhost:3000'), 'baseUrl "localhost:3000" has no scheme: use "http://localhost:3000"');
  assert.equal(refusal('127.0.0.1:3000/'), 'baseUrl "127.0.0.1:3000/" has no scheme: use "http://127.0.0.1:3000"');
  assert.match(refusal('ftp://example.com'), /must be an http\(s\) URL/);
});

it('takes a base URL with a path prefix, and names the URL it posted to when the answer is final', async () => {
  const service = await new FakeService(() => [404, { code: 'not_found' }]).start();
  try {
    const warnings: string[] = [];
    const client = new TraceIngest({ apiKey: 'tik_x', baseUrl: `${service.url}/prefix/`, serverless: true, logger: (message) => warnings.push(message) });
    client.trace('t', () => undefined);
    assert.deepEqual((await client.flush()).rejected, { not_found: 1 });
    assert.deepEqual(warnings, [`[trace-ingest] the service rejected 1 trace: not_found (POST ${service.url}/prefix/v1/traces/ingest answered 404)`]);
  } finally {
    await service.close();
  }
});
