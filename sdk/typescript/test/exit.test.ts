import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { it } from 'node:test';
import { FakeService } from './fake-service.js';
import { exitOf, program } from './support.js';

// How the client behaves at the end of a process: what keeps it alive, what it still delivers.

it('delivers at beforeExit a batch set aside after a 409, when nothing else is left', async () => {
  let answered = 0;
  const service = await new FakeService((ids) => (answered++ === 0 ? [409, { code: 'idempotency_in_progress' }] : [200, { accepted: ids.length, rejected: 0, errors: [] }])).start();
  try {
    // The program lives until its batch was answered 409 and set aside; then only the parked batch is left.
    const child = spawn(process.execPath, program(`
      const client = new TraceIngest({ apiKey: 'tik_x', baseUrl: ${JSON.stringify(service.url)}, flushIntervalMs: 1 });
      for (let i = 0; i < 3; i++) client.trace('t', () => undefined);
      const poll = setInterval(() => { if (client.report().retried.idempotency_in_progress === 1) clearInterval(poll); }, 5);
    `), { stdio: 'inherit' });
    assert.equal(await exitOf(child), 0);
    assert.deepEqual(service.requests.map((request) => request.status), [409, 200]);
    assert.equal(service.requests[0]?.key, service.requests[1]?.key);
    assert.equal(service.delivered().length, 3);
  } finally {
    await service.close();
  }
});

it('keeps a serverless process alive while flush() waits to resend, and the trace is sent', async () => {
  let answered = 0;
  const service = await new FakeService((ids) => (answered++ === 0 ? [503, { code: 'unavailable' }] : [200, { accepted: ids.length, rejected: 0, errors: [] }])).start();
  try {
    const child = spawn(process.execPath, program(`
      const client = new TraceIngest({ apiKey: 'tik_x', baseUrl: ${JSON.stringify(service.url)}, serverless: true });
      client.trace('t', () => undefined);
      const report = await client.flush(60000);
      if (report.sent !== 1) process.exit(3);
    `), { stdio: 'inherit' });
    assert.equal(await exitOf(child), 0);
    assert.deepEqual(service.requests.map((request) => request.status), [503, 200]);
  } finally {
    await service.close();
  }
});

it('lets a background process exit while a batch waits to be resent (its timers do not hold the process)', { timeout: 120_000 }, async () => {
  const service = await new FakeService(() => [503, { code: 'unavailable' }]).start();
  try {
    const child = spawn(process.execPath, program(`
      const client = new TraceIngest({ apiKey: 'tik_x', baseUrl: ${JSON.stringify(service.url)}, flushIntervalMs: 1, flushOnExit: false });
      client.trace('t', () => undefined);
      const poll = setInterval(() => { if (Object.keys(client.report().retried).length > 0) clearInterval(poll); }, 5);
    `), { stdio: 'inherit' });
    assert.equal(await exitOf(child), 0);
    assert.equal(service.delivered().length, 0);
  } finally {
    await service.close();
  }
});
