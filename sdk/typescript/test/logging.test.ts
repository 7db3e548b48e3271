import assert from 'node:assert/strict';
import { it } from 'node:test';
import { TraceIngest } from '../src/index.js';
import { Log } from '../src/log.js';
import { Recorder } from './support.js';

// Failures you can see: what the client logs, how often, and the Lambda warning and wrapper.

function unreachable(): Recorder & { url: string } {
  const recorder = new Recorder([], () => ({ status: null, headers: {}, body: null, failure: 'reset' }));
  return Object.assign(recorder, { url: 'http://127.0.0.1:9/v1/traces/ingest' });
}

it('logs the first connection failure once, naming the URL', async () => {
  const warnings: string[] = [];
  const client = new TraceIngest({ apiKey: 'tik_x', transport: unreachable(), serverless: true, logger: (message: string) => warnings.push(message) });
  client.trace('t', () => undefined);
  for (let i = 0; i < 3; i++) assert.equal((await client.flush(0)).pending, 1); // one attempt each: the retry wait passes the deadline
  assert.equal(warnings.length, 1);
  assert.match(warnings[0] as string, /could not reach http:\/\/127\.0\.0\.1:9\/v1\/traces\/ingest \(reset\)/);
});

it('logs a final rejection with its code and the number of traces, and a drop with its reason', async () => {
  const warnings: string[] = [];
  const recorder = new Recorder([], () => ({ status: 401, headers: {}, body: { code: 'invalid_api_key', detail: 'unknown key' } }));
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, serverless: true, maxQueueTraces: 3, logger: { warn: (message) => warnings.push(message) } });
  for (let i = 0; i < 5; i++) client.trace('t', () => undefined);
  const report = await client.flush();
  assert.deepEqual([report.rejected, report.dropped], [{ invalid_api_key: 3 }, { queue_full: 2 }]);
  assert.equal(warnings.length, 2); // the second drop is the same cause within the minute
  assert.match(warnings[0] as string, /^\[trace-ingest\] dropped 1 trace: queue_full \(queue holds 3 traces, \d+ bytes\)$/);
  assert.equal(warnings[1], '[trace-ingest] the service rejected 3 traces: invalid_api_key (unknown key)');
});

it('logs each cause at most once a minute', () => {
  let now = 0;
  const messages: string[] = [];
  const log = new Log((message) => messages.push(message), false, () => now);
  log.warn('a', 'first');
  log.warn('a', 'again');
  log.warn('b', 'other cause');
  now += 59_999;
  log.warn('a', 'still too soon');
  now += 1;
  log.warn('a', 'a minute later');
  assert.deepEqual(messages, ['[trace-ingest] first', '[trace-ingest] other cause', '[trace-ingest] a minute later']);
});

it('logs every request and answer with debug: true, through the logger\'s debug', async () => {
  const debug: string[] = [];
  const client = new TraceIngest({ apiKey: 'tik_x', transport: new Recorder(), serverless: true, debug: true, logger: { warn: () => assert.fail('no warning expected'), debug: (message) => debug.push(message) } });
  client.trace('t', () => undefined);
  await client.flush();
  assert.equal(debug.length, 2);
  assert.match(debug[0] as string, /^\[trace-ingest\] POST .*Idempotency-Key [0-9a-f-]{36}: 1 traces/);
  assert.match(debug[1] as string, /^\[trace-ingest\] answer to [0-9a-f-]{36}: 200 .* -> delivered$/);
});

it('a logger that throws is ignored', async () => {
  const client = new TraceIngest({ apiKey: 'tik_x', transport: unreachable(), serverless: true, logger: () => { throw new Error('broken logger'); } });
  client.trace('t', () => undefined);
  assert.equal((await client.flush(0)).pending, 1);
});

function inLambda<T>(fn: () => T): T {
  process.env.AWS_LAMBDA_FUNCTION_NAME = 'my-function';
  try {
    return fn();
  } finally {
    delete process.env.AWS_LAMBDA_FUNCTION_NAME;
  }
}

it('in AWS Lambda, warns once when the client is neither serverless nor wrapping the handler', async () => {
  for (const [options, wrap, expected] of [[{}, false, 1], [{ serverless: true }, false, 0], [{}, true, 0]] as const) {
    const warnings: string[] = [];
    const client = inLambda(() => {
      const made = new TraceIngest({ apiKey: 'tik_x', transport: new Recorder(), flushOnExit: false, logger: (message: string) => warnings.push(message), ...options });
      const handler = async () => {
        for (let i = 0; i < 3; i++) made.trace('t', () => undefined);
      };
      return { made, run: wrap ? made.wrapHandler(handler) : handler };
    });
    await inLambda(() => client.run());
    await client.made.shutdown();
    assert.equal(warnings.filter((warning) => warning.includes('serverless: true')).length, expected, JSON.stringify(options));
  }
});

it('wrapHandler flushes before the handler\'s result is returned, and rethrows the handler\'s very error after flushing', async () => {
  const recorder = new Recorder();
  const client = new TraceIngest({ apiKey: 'tik_x', transport: recorder, serverless: true });
  const handler = client.wrapHandler(async (event: { fail: boolean }, _context: { getRemainingTimeInMillis(): number }) => {
    client.trace('invocation', () => undefined);
    if (event.fail) throw error;
    return { statusCode: 200 };
  });
  const error = new RangeError('handler failed');
  const context = { getRemainingTimeInMillis: () => 3_000 };
  assert.deepEqual(await handler({ fail: false }, context), { statusCode: 200 });
  assert.equal(recorder.requests.length, 1);
  await assert.rejects(handler({ fail: true }, context), (caught) => caught === error);
  assert.equal(recorder.requests.length, 2);
});
