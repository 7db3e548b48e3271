import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { currentSpan, TraceIngest, type Undelivered } from '../src/index.js';
import { FakeService } from './fake-service.js';
import { exitOf, ok, program, Recorder } from './support.js';

async function traces(client: TraceIngest, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    await client.trace('t', async (trace) => {
      ids.push(trace.traceId);
      client.span('s', () => undefined);
    });
  }
  return ids;
}

it('sends batches of at most 500 traces, every trace once', async () => {
  const recorder = new Recorder();
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, flushIntervalMs: 60_000 });
  const ids = await traces(client, 1234);
  const report = await client.flush(10_000);
  assert.deepEqual([...recorder.traceIds].sort(), [...ids].sort());
  assert.equal(Math.max(...recorder.requests.map((request) => request.body.traces.length)), 500);
  assert.deepEqual([report.handed, report.sent, report.pending], [1234, 1234, 0]);
  await client.shutdown();
});

it('never lets a batch body exceed the ceiling', async () => {
  const recorder = new Recorder();
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, maxBodyBytes: 20_000, serverless: true });
  for (let i = 0; i < 30; i++) client.trace('big', { attributes: { pad: 'x'.repeat(2000) } }, () => undefined);
  await client.flush();
  assert.ok(recorder.requests.length > 1);
  for (const request of recorder.requests) assert.ok(gunzipSync(request.raw).length <= 20_000);
  assert.equal(recorder.traceIds.length, 30);
});

it('drops a trace larger than a batch may hold, counts it and tells the callback', async () => {
  const recorder = new Recorder();
  const seen: Undelivered[] = [];
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, maxBodyBytes: 5_000, serverless: true, onUndelivered: (event) => seen.push(event) });
  const id = client.trace('huge', { attributes: { pad: 'x'.repeat(6000) } }, (trace) => trace.traceId);
  const report = await client.flush();
  assert.deepEqual(report.dropped, { trace_too_large: 1 });
  assert.equal(recorder.requests.length, 0);
  assert.deepEqual(seen[0], { outcome: 'dropped', reason: 'trace_too_large', detail: seen[0]?.detail, traceIds: [id] });
});

/** A transport that holds every request until `open()`; `entered` resolves when the first request has arrived. */
function gated() {
  let open!: () => void;
  let arrived!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const entered = new Promise<void>((resolve) => (arrived = resolve));
  const recorder = new Recorder([], async (sent) => {
    arrived();
    await gate;
    return ok(sent.length);
  });
  return { recorder, open, entered };
}

it('drops the newest traces when the queue is full, and counts them', async () => {
  const { recorder, open, entered } = gated();
  // The first batch leaves when its fifth trace is queued (a full batch), never by the timer: a 10 ms timer could
  // fire mid-burst on a busy machine and send a smaller first batch, leaving more room in the queue than counted.
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, maxQueueTraces: 10, maxBatchTraces: 5, flushIntervalMs: 60_000 });
  await traces(client, 5);
  await entered; // the pump holds the first batch at the gate: the queue is empty again
  await traces(client, 15);
  assert.deepEqual(client.report().dropped, { queue_full: 5 });
  open();
  const report = await client.flush(10_000);
  assert.deepEqual([report.sent, report.dropped, report.pending], [15, { queue_full: 5 }, 0]);
  await client.shutdown();
});

it('makes the trace wait for room up to blockTimeoutMs when told to block', async () => {
  const { recorder, open, entered } = gated();
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, maxQueueTraces: 2, maxBatchTraces: 1, flushIntervalMs: 10, whenFull: 'block', blockTimeoutMs: 300 });
  await traces(client, 1);
  await entered;
  await traces(client, 2);
  const started = performance.now();
  await traces(client, 1); // waits, then gives up
  assert.ok(performance.now() - started >= 290);
  assert.deepEqual(client.report().dropped, { queue_full: 1 });
  const waiting = traces(client, 1); // room appears while it waits
  open();
  await waiting;
  assert.equal((await client.flush(10_000)).sent, 4);
  await client.shutdown();
});

it('keeps concurrent async tasks in their own spans, parents filled in', async () => {
  const recorder = new Recorder();
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, serverless: true });
  const lookup = client.observe(
    async (n: number) => {
      await sleep(5);
      assert.equal(currentSpan()?.name, 'lookup');
      return n * 2;
    },
    { name: 'lookup', kind: 'tool' },
  );
  const results = await client.trace('agent', () => client.span('fan-out', { kind: 'chain' }, () => Promise.all([0, 1, 2, 3, 4].map((n) => lookup(n)))));
  assert.deepEqual(results, [0, 2, 4, 6, 8]);
  await client.flush();
  const spans = recorder.requests[0]?.body.traces[0]?.spans as Record<string, unknown>[];
  assert.deepEqual(spans.slice(1).map((span) => span.parent_span_id), Array(5).fill(spans[0]?.span_id));
  assert.deepEqual(spans.slice(1).map((span) => span.output).sort(), ['0', '2', '4', '6', '8']);
  assert.deepEqual(spans.slice(1).map((span) => span.input).sort(), ['[0]', '[1]', '[2]', '[3]', '[4]']);
});

it('observe opens a trace when none is open and rethrows the very error', async () => {
  const recorder = new Recorder();
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, serverless: true });
  const error = new RangeError('missing');
  const fails = client.observe(() => {
    throw error;
  }, { name: 'fails' });
  assert.throws(() => fails(), (caught) => caught === error);
  await client.flush();
  const trace = recorder.requests[0]?.body.traces[0] as Record<string, unknown>;
  const span = (trace.spans as Record<string, unknown>[])[0] as Record<string, unknown>;
  assert.deepEqual([trace.status, span.status, span.error_message], ['error', 'error', 'RangeError: missing']);
});

it('drops a trace whose mask throws rather than send it unmasked', async () => {
  const recorder = new Recorder();
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, serverless: true, mask: () => { throw new Error('bad mask'); } });
  await traces(client, 1);
  assert.deepEqual((await client.flush()).dropped, { not_serialisable: 1 });
  assert.equal(recorder.requests.length, 0);
});

it('in serverless mode sends only inside flush()', async () => {
  const recorder = new Recorder();
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, serverless: true, flushIntervalMs: 1 });
  await traces(client, 3);
  await sleep(30);
  assert.equal(recorder.requests.length, 0);
  assert.equal((await client.flush()).sent, 3);
  assert.equal(recorder.requests.length, 1);
});

it('shutdown returns by its timeout and reports what is still pending', async () => {
  const recorder = new Recorder([], () => ({ status: 503, headers: { 'retry-after': '30' }, body: { code: 'unavailable' } }));
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, flushIntervalMs: 10 });
  await traces(client, 3);
  const started = performance.now();
  const report = await client.shutdown(500);
  assert.ok(performance.now() - started < 2_000);
  assert.deepEqual([report.sent, report.pending], [0, 3]);
  await traces(client, 1);
  assert.deepEqual(client.report().dropped, { shut_down: 1 });
});

it('reads its configuration from the environment', () => {
  process.env.TRACE_INGEST_API_KEY = 'tik_env';
  process.env.TRACE_INGEST_BASE_URL = 'http://127.0.0.1:1';
  process.env.TRACE_INGEST_ENVIRONMENT = 'prod';
  try {
    assert.equal(new TraceIngest({ serverless: true }).environment, 'prod');
    delete process.env.TRACE_INGEST_API_KEY;
    assert.throws(() => new TraceIngest(), /TRACE_INGEST_API_KEY/);
  } finally {
    delete process.env.TRACE_INGEST_BASE_URL;
    delete process.env.TRACE_INGEST_ENVIRONMENT;
  }
});

it('flushes at beforeExit what the program queued', async () => {
  const service = await new FakeService().start();
  try {
    const child = spawn(process.execPath, program(`
      const client = new TraceIngest({ apiKey: 'tik_x', baseUrl: ${JSON.stringify(service.url)}, flushIntervalMs: 60000 });
      for (let i = 0; i < 7; i++) client.trace('t', () => undefined);
    `), { stdio: 'inherit' });
    assert.equal(await exitOf(child), 0);
    assert.equal(service.delivered().length, 7);
  } finally {
    await service.close();
  }
});

it('flushes on SIGTERM only when the user opted in, and still exits by the signal', async () => {
  const service = await new FakeService().start();
  try {
    for (const [optIn, expected] of [[false, 0], [true, 4]] as const) {
      service.requests.length = 0;
      const child = spawn(process.execPath, program(`
        const client = new TraceIngest({ apiKey: 'tik_x', baseUrl: ${JSON.stringify(service.url)}, flushIntervalMs: 60000, handleSignals: ${optIn} });
        for (let i = 0; i < 4; i++) client.trace('t', () => undefined);
        setTimeout(() => {}, 10000);
        process.kill(process.pid, 'SIGTERM');
      `), { stdio: 'inherit' });
      assert.equal(await exitOf(child), 'SIGTERM');
      assert.equal(service.delivered().length, expected);
    }
  } finally {
    await service.close();
  }
});

it('resends a spooled batch after kill -9 with its original key, once', async () => {
  let down = true;
  const service = await new FakeService((ids) => (down ? [503, { code: 'unavailable' }] : [200, { accepted: ids.length, rejected: 0, errors: [] }])).start();
  const spool = mkdtempSync(path.join(tmpdir(), 'ti-spool-'));
  try {
    const child = spawn(process.execPath, program(`
      const client = new TraceIngest({ apiKey: 'tik_x', baseUrl: ${JSON.stringify(service.url)}, spoolDir: ${JSON.stringify(spool)}, flushIntervalMs: 10 });
      for (let i = 0; i < 20; i++) client.trace('t', () => undefined);
      setTimeout(() => {}, 60000);
    `), { stdio: 'inherit' });
    const deadline = Date.now() + 20_000;
    while (service.requests.length < 2) {
      assert.ok(Date.now() < deadline, 'the child sent nothing');
      await sleep(50);
    }
    child.kill('SIGKILL');
    await exitOf(child);
    const first = new Map(service.requests.map((request) => [request.key, request.traceIds]));
    assert.ok(readdirSync(spool).some((name) => name.endsWith('.seg')));
    down = false;
    const recovery = spawn(process.execPath, program(`
      const client = new TraceIngest({ apiKey: 'tik_x', baseUrl: ${JSON.stringify(service.url)}, spoolDir: ${JSON.stringify(spool)} });
      const report = await client.flush(10000);
      console.log(report.recovered, report.sent, report.pending);
    `), { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    recovery.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
    assert.equal(await exitOf(recovery), 0);
    assert.deepEqual(out.trim().split(' '), ['20', '20', '0']);
    const resent = new Map(service.requests.filter((request) => request.status === 200).map((request) => [request.key, request.traceIds]));
    assert.deepEqual(resent, first); // every batch, with its original key and the same traces
    assert.deepEqual(readdirSync(spool), []);
  } finally {
    await service.close();
  }
});


it('sets aside a batch whose key is still in progress (409) while the others go', async () => {
  let firstKey: string | undefined;
  const recorder = new Recorder();
  const post = recorder.post.bind(recorder);
  recorder.post = async (body, headers) => {
    const answer = await post(body, headers);
    if (firstKey !== undefined) return answer;
    firstKey = headers['Idempotency-Key'];
    return { status: 409, headers: { 'retry-after': '1' }, body: { code: 'idempotency_in_progress' } };
  };
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, maxBatchTraces: 1, flushIntervalMs: 10 });
  await traces(client, 2);
  const report = await client.flush(10_000);
  const keys = recorder.requests.map((request) => request.headers['idempotency-key']);
  assert.deepEqual([keys[0] === firstKey, keys[1] !== firstKey, keys[2] === firstKey], [true, true, true]);
  assert.deepEqual([report.sent, report.pending, report.retried], [2, 0, { idempotency_in_progress: 1 }]);
  await client.shutdown();
});

it('resends only the unsent part of a split batch that the flush deadline stopped, under that part\'s key', async () => {
  const recorder = new Recorder([
    { status: 429, headers: { 'retry-after': '60' }, body: { code: 'batch_exceeds_quota' } },
    ok(2),
    { status: 429, headers: { 'retry-after': '60' }, body: { code: 'rate_limited' } },
  ]);
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, serverless: true });
  const ids = await traces(client, 4);
  const first = await client.flush(1_000);
  assert.deepEqual([first.sent, first.pending], [2, 2]);
  const second = await client.flush();
  assert.deepEqual([second.handed, second.sent, second.pending], [4, 4, 0]);
  const last = recorder.requests.at(-1) as (typeof recorder.requests)[number];
  assert.deepEqual(last.body.traces.map((trace) => trace.trace_id).sort(), ids.slice(2).sort());
  assert.equal(last.headers['idempotency-key'], recorder.requests[2]?.headers['idempotency-key']);
});

it('settles a batch whose serverless flush failed inside, and returns instead of throwing', async () => {
  const recorder = new Recorder([], () => {
    throw new TypeError('Invalid header value');
  });
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, serverless: true });
  await traces(client, 3);
  const report = await client.flush();
  assert.deepEqual([report.sent, report.pending, report.dropped], [0, 0, { internal_error: 3 }]);
});

it('keeps the spool owner file fresh while the spool is busy, so no other process takes its batches for orphans', async () => {
  const { Spool } = await import('../src/spool.js');
  const { Batch } = await import('../src/delivery.js');
  const { tableCrc32 } = await import('../src/crc32.js');
  const fs = await import('node:fs');
  const { statSync, utimesSync } = fs;
  const directory = mkdtempSync(path.join(tmpdir(), 'spool-beat-'));
  const spool = new Spool(directory, { fs, crc32: tableCrc32 });
  const ownerFile = path.join(directory, `${spool.owner}.owner`);
  const longAgo = (Date.now() - 61_000) / 1000;
  utimesSync(ownerFile, longAgo, longAgo);
  (spool as unknown as { lastBeat: number }).lastBeat = Date.now() - 11_000;
  spool.batch(new Batch('k1', ['t1'], new Uint8Array([123, 125])));
  assert.ok(Date.now() - statSync(ownerFile).mtimeMs < 5_000);
});

it('sends a lone surrogate as the JSON escape, in every string it serialises, and never throws for it', async () => {
  const recorder = new Recorder();
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, serverless: true });
  client.trace('name \ud800', { userId: 'u\udfff', attributes: { a: '\ud83d' } }, (trace) => trace.span('s', { input: { q: 'x\ud800y' } }, () => undefined));
  assert.equal((await client.flush()).sent, 1);
  const text = gunzipSync(recorder.requests[0]?.raw as Uint8Array).toString('utf8');
  for (const escaped of ['name \\ud800', 'u\\udfff', '\\\\ud83d', 'x\\\\ud800y']) assert.ok(text.includes(escaped), escaped);
  assert.ok(!/[\ud800-\udfff]/.test(text.replace(/[\ud800-\udbff][\udc00-\udfff]/g, '')));
});
