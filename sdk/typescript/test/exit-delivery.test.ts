import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { it } from 'node:test';
import { FakeService } from './fake-service.js';
import { runProgram, sdkLines } from './support.js';

// How a process ends with traces still on their way: each exit either leaves them in the spool for the next start,
// or says in one line how many were lost and why.

const answer500 = (): [number, unknown] => [500, { code: 'internal_error' }];

function spoolDir(): string {
  return mkdtempSync(path.join(tmpdir(), 'ti-exit-'));
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A program whose traced function crashes the process from a timer inside its span: nothing of the SDK's sees the throw. */
const crashInsideSpan = `
  client.trace('crashing', async () => {
    await client.span('step', { kind: 'tool' }, () => new Promise(() => setTimeout(() => { throw new Error('boom'); }, 10)));
  });
`;

it('says in one line that process.exit() lost the traces still queued, how many and why, without a spool', async () => {
  const service = await new FakeService().start();
  try {
    const { exit, stderr } = await runProgram(`
      const client = new TraceIngest({ apiKey: 'tik_x', baseUrl: ${JSON.stringify(service.url)} });
      for (let i = 0; i < 50; i++) client.trace('t', () => undefined);
      process.exit(3);
    `);
    assert.equal(exit, 3);
    assert.equal(service.delivered().length, 0);
    const lines = sdkLines(stderr);
    assert.equal(lines.length, 1, stderr);
    assert.match(lines[0] as string, /^\[trace-ingest\] 50 traces not delivered, lost at exit: process\.exit\(3\) ended the process before they were sent/);
    assert.match(lines[0] as string, /spoolDir/);
  } finally {
    await service.close();
  }
});

it('writes what process.exit() cut off to the spool, and the next start sends every trace once', async () => {
  const service = await new FakeService().start();
  const directory = spoolDir();
  try {
    const first = await runProgram(`
      const client = new TraceIngest({ apiKey: 'tik_x', baseUrl: ${JSON.stringify(service.url)}, spoolDir: ${JSON.stringify(directory)} });
      for (let i = 0; i < 50; i++) client.trace('t', () => undefined);
      process.exit(3);
    `);
    assert.equal(first.exit, 3);
    assert.equal(service.delivered().length, 0);
    assert.match(sdkLines(first.stderr).join('\n'), /50 traces not delivered, kept in the spool/);
    const next = await runProgram(`new TraceIngest({ apiKey: 'tik_x', baseUrl: ${JSON.stringify(service.url)}, spoolDir: ${JSON.stringify(directory)} });`);
    assert.equal(next.exit, 0);
    assert.equal(service.storedCounts().size, 50);
    assert.ok([...service.storedCounts().values()].every((count) => count === 1));
  } finally {
    await service.close();
  }
});

it('on an uncaught exception inside a traced function, spools the crashing trace with its error, and the process still crashes as it would have', async () => {
  const service = await new FakeService().start();
  const directory = spoolDir();
  try {
    const bare = await runProgram(`const client = { trace: (name, fn) => fn(), span: (name, options, fn) => fn() };\n${crashInsideSpan}`);
    const crashed = await runProgram(`const client = new TraceIngest({ apiKey: 'tik_x', baseUrl: ${JSON.stringify(service.url)}, spoolDir: ${JSON.stringify(directory)} });\n${crashInsideSpan}`);
    assert.equal(crashed.exit, bare.exit);
    assert.notEqual(crashed.exit, 0);
    const stack = (stderr: string) => stderr.split('\n').filter((line) => line.startsWith('Error: boom') || line.trim().startsWith('at '));
    assert.ok(stack(bare.stderr).length > 1, bare.stderr);
    assert.deepEqual(stack(crashed.stderr), stack(bare.stderr));
    assert.match(sdkLines(crashed.stderr).join('\n'), /1 trace not delivered, kept in the spool .*: an uncaught exception \(Error: boom\) ended the process/);
    assert.equal(service.delivered().length, 0);

    const next = await runProgram(`new TraceIngest({ apiKey: 'tik_x', baseUrl: ${JSON.stringify(service.url)}, spoolDir: ${JSON.stringify(directory)} });`);
    assert.equal(next.exit, 0);
    const traces = service.requests.flatMap((request) => request.traces);
    assert.equal(traces.length, 1);
    const [trace] = traces as [Record<string, unknown>];
    assert.equal(trace.root_span_name, 'crashing');
    assert.equal(trace.status, 'error');
    const [span] = trace.spans as [Record<string, unknown>];
    assert.deepEqual([span.name, span.status, span.error_message], ['step', 'error', 'Error: boom']);
    assert.equal(typeof span.duration_ms, 'number');
  } finally {
    await service.close();
  }
});

it('on an uncaught exception without a spool, says the crashing trace was lost and why', async () => {
  const service = await new FakeService().start();
  try {
    const { exit, stderr } = await runProgram(`const client = new TraceIngest({ apiKey: 'tik_x', baseUrl: ${JSON.stringify(service.url)} });\n${crashInsideSpan}`);
    assert.equal(exit, 1);
    assert.match(stderr, /^Error: boom$/m);
    const lines = sdkLines(stderr);
    assert.equal(lines.length, 1, stderr);
    assert.match(lines[0] as string, /^\[trace-ingest\] 1 trace not delivered, lost at exit: an uncaught exception \(Error: boom\) ended the process/);
  } finally {
    await service.close();
  }
});

it('says at the end of a program that every trace answered 500 was lost, with the URL and the status', async () => {
  const service = await new FakeService(answer500).start();
  try {
    const { exit, stderr } = await runProgram(`
      const client = new TraceIngest({ apiKey: 'tik_x', baseUrl: ${JSON.stringify(service.url)}, shutdownTimeoutMs: 1500 });
      for (let i = 0; i < 10; i++) client.trace('t', () => undefined);
    `);
    assert.equal(exit, 0);
    assert.ok(service.requests.length > 0);
    const last = sdkLines(stderr).at(-1) ?? '';
    assert.match(last, /^\[trace-ingest\] 10 traces not delivered, lost at exit: /, stderr);
    assert.ok(last.includes(`POST ${service.url}/v1/traces/ingest answered 500 (internal_error)`), last);
    assert.match(last, /shutdownTimeoutMs/);
  } finally {
    await service.close();
  }
});

it('ends with a line saying the traces were lost, not that they will be retried, when the service is unreachable', async () => {
  const url = `http://127.0.0.1:${await closedPort()}`;
  const { exit, stderr } = await runProgram(`
    const client = new TraceIngest({ apiKey: 'tik_x', baseUrl: ${JSON.stringify(url)}, shutdownTimeoutMs: 1500 });
    for (let i = 0; i < 10; i++) client.trace('t', () => undefined);
  `);
  assert.equal(exit, 0);
  const last = stderr.trimEnd().split('\n').at(-1) ?? '';
  assert.match(last, /^\[trace-ingest\] 10 traces not delivered, lost at exit: /, stderr);
  assert.ok(last.includes(`could not reach ${url}/v1/traces/ingest`), last);
});

it('with handleSignals, says what the flush on SIGTERM left unsent before the signal ends the process', async () => {
  const service = await new FakeService(answer500).start();
  try {
    const { exit, stderr } = await runProgram(`
      const client = new TraceIngest({ apiKey: 'tik_x', baseUrl: ${JSON.stringify(service.url)}, handleSignals: true, shutdownTimeoutMs: 1000, flushIntervalMs: 1 });
      for (let i = 0; i < 4; i++) client.trace('t', () => undefined);
      const poll = setInterval(() => { if (Object.keys(client.report().retried).length > 0) { clearInterval(poll); process.kill(process.pid, 'SIGTERM'); } }, 5);
      setTimeout(() => undefined, 60000);
    `);
    assert.equal(exit, 'SIGTERM');
    const last = sdkLines(stderr).at(-1) ?? '';
    assert.match(last, /^\[trace-ingest\] 4 traces not delivered, lost at exit: still unsent after 1000 ms of flushing at shutdown/, stderr);
    assert.ok(last.includes(`POST ${service.url}/v1/traces/ingest answered 500 (internal_error)`), last);
  } finally {
    await service.close();
  }
});
