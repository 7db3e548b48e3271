import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import type { Answer } from '../src/index.js';
import { BODY_OVERHEAD, Batch, type BatchStore, Deliverer, type DelivererOptions, type Parked } from '../src/delivery.js';
import { Ledger } from '../src/ledger.js';
import { Log } from '../src/log.js';
import { USER_AGENT } from '../src/transport.js';
import { ok, Recorder } from './support.js';

// The delivery core on its own: what reaches the spool and when, the retry deadline, parking on 409, resuming,
// and a failure of our own. The shared vectors (conformance.test.ts) pin the requests and the accounting.

const encoder = new TextEncoder();
const item = (id: string) => ({ traceId: id, data: encoder.encode(`{"trace_id":"${id}"}`) });
const unavailable = (retryAfter?: string): Answer => ({ status: 503, headers: retryAfter === undefined ? {} : { 'retry-after': retryAfter }, body: { code: 'unavailable' } });

/** A spool that records what it is told, in order, with the requests sent. */
class Events implements BatchStore {
  readonly log: string[] = [];
  write(batch: Batch): void {
    this.log.push(`write ${batch.key} ${batch.traceIds.join(',')}`);
  }
  done(key: string, ids: readonly string[], now?: boolean): void {
    this.log.push(`done ${key} [${ids.join(',')}]${now ? ' now' : ''}`);
  }
}

function deliverer(answers: Answer[], extra: Partial<DelivererOptions> = {}) {
  const events = new Events();
  const transport = new Recorder(answers);
  const post = transport.post.bind(transport);
  transport.post = async (body, headers) => {
    events.log.push(`post ${headers['Idempotency-Key'] ?? ''}`);
    return post(body, headers);
  };
  const ledger = new Ledger(undefined, new Log(() => undefined));
  const sleeps: number[] = [];
  const core = new Deliverer({
    transport,
    apiKey: 'tik_x',
    ledger,
    spool: events,
    jitter: () => 0,
    sleep: async (seconds) => {
      sleeps.push(seconds);
      return true;
    },
    ...extra,
  });
  return { core, events, transport, ledger, sleeps };
}

describe('a batch', () => {
  it('is the traces joined as one JSON body, kept with its key', () => {
    const batch = Batch.of([item('a'), item('b'), item('c')], 'k');
    assert.equal(new TextDecoder().decode(batch.body), '{"traces":[{"trace_id":"a"},{"trace_id":"b"},{"trace_id":"c"}]}');
    assert.deepEqual([batch.key, batch.traceIds], ['k', ['a', 'b', 'c']]);
    assert.equal(new TextDecoder().decode(Batch.of([]).body), '{"traces":[]}');
    assert.equal(Batch.of([]).body.length, BODY_OVERHEAD);
    assert.match(Batch.of([item('a')]).key, /^[0-9a-f-]{36}$/);
    assert.notEqual(Batch.of([item('a')]).key, Batch.of([item('a')]).key);
  });

  it('gives back its traces, also when read back from its body alone (recovered from the spool)', () => {
    const made = Batch.of([item('a'), item('b')], 'k');
    const recovered = new Batch('k', ['a', 'b'], made.body);
    for (const batch of [made, recovered]) {
      assert.deepEqual(
        batch.traces().map((trace) => [trace.traceId, new TextDecoder().decode(trace.data)]),
        [['a', '{"trace_id":"a"}'], ['b', '{"trace_id":"b"}']],
      );
    }
  });
});

describe('the delivery core', () => {
  it('writes a batch to the spool before its first request, and closes it with its traces once delivered', async () => {
    const { core, events, ledger } = deliverer([unavailable(), ok(2)]);
    assert.deepEqual(await core.deliver(Batch.of([item('a'), item('b')], 'k')), []);
    assert.deepEqual(events.log, ['write k a,b', 'post k', 'post k', 'done k [a,b]']);
    assert.equal(ledger.report().sent, 2);
  });

  it('sends the headers of the API', async () => {
    const { core, transport } = deliverer([]);
    await core.deliver(Batch.of([item('a')], 'k'));
    const request = transport.requests[0] as (typeof transport.requests)[number];
    assert.deepEqual(request.headers, {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
      'x-api-key': 'tik_x',
      'idempotency-key': 'k',
      'user-agent': USER_AGENT,
    });
    assert.equal(gunzipSync(request.raw).toString(), '{"traces":[{"trace_id":"a"}]}');
  });

  it('sends a prepared gzip body as it is, for the first batch only', async () => {
    const { core, transport } = deliverer([{ status: 413, headers: {}, body: { code: 'batch_too_large' } }]);
    const { gzip } = await import('../src/gzip.js');
    const prepared = gzip(encoder.encode('{"traces":[{"trace_id":"prepared"}]}'));
    await core.deliver(Batch.of([item('a'), item('b')], 'k'), false, prepared);
    assert.deepEqual(transport.requests.map((request) => request.body.traces.map((trace) => trace.trace_id)), [['prepared'], ['a'], ['b']]);
  });

  it('does not write again a batch the spool holds already, or one resumed after parking', async () => {
    for (const [spooled, resume] of [[true, undefined], [false, { batch: Batch.of([]), due: 0, attempt: 1, startedSeconds: 0 }]] as const) {
      const { core, events } = deliverer([], { clock: () => 0 });
      await core.deliver(Batch.of([item('a')], 'k'), spooled, undefined, resume as Parked | undefined);
      assert.deepEqual(events.log, ['post k', 'done k [a]']);
    }
  });

  it('closes a rejected batch with its traces', async () => {
    const { core, events, ledger } = deliverer([{ status: 400, headers: {}, body: { code: 'malformed_body', detail: 'x' } }]);
    await core.deliver(Batch.of([item('a'), item('b')], 'k'));
    assert.deepEqual(events.log, ['write k a,b', 'post k', 'done k [a,b]']);
    assert.deepEqual(ledger.report().rejected, { malformed_body: 2 });
  });

  it('writes both halves of a split before it closes the whole, at once and with no trace', async () => {
    const { core, events, transport } = deliverer([{ status: 413, headers: {}, body: { code: 'batch_too_large' } }]);
    await core.deliver(Batch.of([item('a'), item('b'), item('c')], 'k'));
    const [left, right] = transport.requests.slice(1).map((request) => request.headers['idempotency-key']);
    assert.deepEqual(events.log, ['write k a,b,c', 'post k', `write ${left} a,b`, `write ${right} c`, 'done k [] now', `post ${left}`, `done ${left} [a,b]`, `post ${right}`, `done ${right} [c]`]);
  });

  it('drops a batch once the next wait would end past maxRetrySeconds from its first request, and not before', async () => {
    let now = 100;
    const sleeps: number[] = [];
    // Retry-After 10 with no jitter: a wait of exactly 10 s.
    const { core, ledger, events } = deliverer([unavailable('10'), unavailable('10'), unavailable('10')], {
      maxRetrySeconds: 25,
      clock: () => now,
      sleep: async (seconds) => {
        sleeps.push(seconds);
        now += seconds;
        return true;
      },
    });
    assert.deepEqual(await core.deliver(Batch.of([item('a')], 'k')), []);
    // 100 → 110 → 120 (20 s of 25) → 130 would be 30 s: dropped after two waits.
    assert.deepEqual(sleeps, [10, 10]);
    const report = ledger.report();
    assert.deepEqual([report.dropped, report.retried], [{ retries_exhausted: 1 }, { unavailable: 2 }]);
    assert.equal(events.log.at(-1), 'done k [a]');
  });

  it('retries when the wait ends exactly at the deadline', async () => {
    const { core, ledger, sleeps } = deliverer([unavailable('10'), ok(1)], { maxRetrySeconds: 10, clock: () => 0 });
    await core.deliver(Batch.of([item('a')], 'k'));
    assert.deepEqual([sleeps, ledger.report().sent], [[10], 1]);
  });

  it('says which answer and how long in a drop for retries exhausted', async () => {
    const told: { outcome: string; reason: string; detail: string }[] = [];
    const ledger = new Ledger((event) => told.push({ outcome: event.outcome, reason: event.reason, detail: event.detail }), new Log(() => undefined));
    const { core } = deliverer([unavailable('60')], { ledger, maxRetrySeconds: 30, clock: () => 0 });
    await core.deliver(Batch.of([item('a')], 'k'));
    assert.deepEqual(told, [{ outcome: 'dropped', reason: 'retries_exhausted', detail: 'still unavailable after 30 s' }]);
  });

  it('waits 600 s at most by default', async () => {
    const { core, ledger } = deliverer([unavailable('599'), unavailable('601')], { clock: () => 0 });
    await core.deliver(Batch.of([item('a')], 'k'));
    assert.deepEqual(ledger.report().dropped, { retries_exhausted: 1 });
    assert.deepEqual(ledger.report().retried, { unavailable: 1 });
  });

  it('parks a batch answered 409 when it can, with the next attempt and its first request time; other retries wait', async () => {
    const parked: Parked[] = [];
    const { core, sleeps, ledger } = deliverer([{ status: 409, headers: { 'retry-after': '2' }, body: { code: 'idempotency_in_progress' } }], { park: (p) => parked.push(p), clock: () => 50 });
    const batch = Batch.of([item('a')], 'k');
    const before = performance.now();
    assert.deepEqual(await core.deliver(batch), []);
    const after = performance.now();
    assert.equal(parked.length, 1);
    const [one] = parked as [Parked];
    assert.deepEqual([one.batch, one.attempt, one.startedSeconds, sleeps], [batch, 1, 50, []]);
    assert.ok(one.due >= before + 2000 && one.due <= after + 2000, `due ${one.due - before} ms after`);
    assert.deepEqual([ledger.report().retried, ledger.report().dropped], [{ idempotency_in_progress: 1 }, {}]);

    const waited = deliverer([unavailable('2'), ok(1)], { park: () => assert.fail('only a 409 is parked') });
    await waited.core.deliver(Batch.of([item('a')], 'k'));
    assert.deepEqual(waited.sleeps, [2]);
  });

  it('resumes a parked batch at its attempt, against the deadline of its first request', async () => {
    const batch = Batch.of([item('a')], 'k');
    // Attempt 3 with jitter 1: a backoff of 0.5 × 2³ = 4 s.
    const resumed = deliverer([unavailable(), ok(1)], { jitter: () => 1 - Number.EPSILON, clock: () => 1000 });
    await resumed.core.deliver(batch, true, undefined, { batch, due: 0, attempt: 3, startedSeconds: 990 });
    assert.ok(Math.abs((resumed.sleeps[0] as number) - 4) < 1e-6, `${resumed.sleeps[0]}`);
    // Started 595 s ago: a wait of 10 s would pass the 600 s.
    const late = deliverer([unavailable('10')], { clock: () => 1000 });
    await late.core.deliver(batch, true, undefined, { batch, due: 0, attempt: 1, startedSeconds: 405 });
    assert.deepEqual([late.sleeps, late.ledger.report().dropped], [[], { retries_exhausted: 1 }]);
  });

  it('gives back what a stopped wait left unsent: the batch, or once split only its parts not yet answered', async () => {
    const stop = { sleep: async () => false };
    const whole = deliverer([unavailable()], stop);
    const batch = Batch.of([item('a'), item('b')], 'k');
    assert.deepEqual(await whole.core.deliver(batch), [batch]);
    assert.deepEqual(whole.events.log, ['write k a,b', 'post k']);

    const split = deliverer([{ status: 413, headers: {}, body: { code: 'batch_too_large' } }, ok(1), unavailable()], stop);
    const left = await split.core.deliver(Batch.of([item('a'), item('b'), item('c')], 'k'));
    assert.deepEqual(left.map((part) => part.traceIds), [['c']]);
    assert.equal(split.ledger.report().sent, 2);
  });

  it('drops as internal_error what a failure of its own left unsettled, closing it in the spool, and never throws', async () => {
    const { core, events, ledger } = deliverer([{ status: 413, headers: {}, body: { code: 'batch_too_large' } }, ok(1)]);
    const transport = (core as unknown as { options: DelivererOptions }).options.transport;
    const post = transport.post.bind(transport);
    let calls = 0;
    transport.post = async (body, headers) => {
      if (++calls === 3) throw new Error('boom');
      return post(body, headers);
    };
    assert.deepEqual(await core.deliver(Batch.of([item('a'), item('b'), item('c'), item('d')], 'k')), []);
    const report = ledger.report();
    assert.deepEqual([report.sent, report.dropped], [2, { internal_error: 2 }]);
    const right = events.log.find((line) => line.startsWith('write ') && line.endsWith(' c,d'))?.split(' ')[1];
    assert.equal(events.log.at(-1), `done ${right} [c,d]`);
  });

  it('logs every request and answer with debug, and a connection failure naming the service', async () => {
    const lines: string[] = [];
    const log = new Log((message) => lines.push(message), true);
    const { core, transport } = deliverer([{ status: null, headers: {}, body: null, failure: 'reset' }, unavailable('3')], { log });
    Object.defineProperty(transport, 'url', { value: 'http://svc/v1/traces/ingest' });
    await core.deliver(Batch.of([item('a'), item('b')], 'k'));
    const size = Batch.of([item('a'), item('b')]).body.length;
    assert.equal(lines[0], `[trace-ingest] POST http://svc/v1/traces/ingest Idempotency-Key k: 2 traces, ${size} bytes (${transport.requests[0]?.raw.length} gzip), attempt 1`);
    assert.equal(lines[1], '[trace-ingest] answer to k: reset null -> retry in 0.000 s');
    assert.equal(lines[2], '[trace-ingest] could not reach http://svc/v1/traces/ingest (reset): check baseUrl; retrying with the same Idempotency-Key');
    assert.match(lines[3] as string, /attempt 2$/);
    assert.equal(lines[4], '[trace-ingest] answer to k: 503 {"code":"unavailable"} -> retry in 3.000 s');
    assert.equal(lines[6], '[trace-ingest] answer to k: 200 {"accepted":2,"rejected":0,"errors":[]} -> delivered');
    assert.equal(lines.length, 7);
  });
});

it('names neither URL nor failure it does not know: a transport without a url, an answer without a status or a kind of failure', async () => {
  const lines: string[] = [];
  const { core } = deliverer([{ status: null, headers: {}, body: null }], { log: new Log((message) => lines.push(message), true) });
  await core.deliver(Batch.of([item('a')], 'k'));
  assert.match(lines[0] as string, /^\[trace-ingest\] POST {2}Idempotency-Key k: 1 traces/);
  assert.equal(lines[2], '[trace-ingest] could not reach the service (network error): check baseUrl; retrying with the same Idempotency-Key');
});

describe('the last failure, for the exit line', () => {
  const URL = 'https://traces.example.com/v1/traces/ingest';
  const at = (answers: Answer[], extra: Partial<DelivererOptions> = {}) => {
    const made = deliverer(answers, extra);
    Object.assign(made.transport, { url: URL });
    return made;
  };

  it('is the URL and the status of a resent batch, or why the service could not be reached, until a delivery clears it', async () => {
    const seen: (string | undefined)[] = [];
    const { core, ledger } = at([{ status: 500, headers: {}, body: { code: 'internal_error' } }, { status: 503, headers: {}, body: {} }], {
      sleep: async () => {
        seen.push(ledger.lastFailure);
        return seen.length < 2;
      },
    });
    assert.equal((await core.deliver(Batch.of([item('a')], 'k'))).length, 1);
    assert.deepEqual(seen, [`POST ${URL} answered 500 (internal_error)`, `POST ${URL} answered 503 (http_503)`]);
    await core.deliver(Batch.of([item('b')], 'k2'));
    assert.equal(ledger.lastFailure, undefined);
  });

  it('names the service when the transport has no URL', async () => {
    const { core, ledger } = deliverer([{ status: 500, headers: {}, body: {} }, { status: null, headers: {}, body: null, failure: 'reset' }], {
      sleep: async () => ledger.lastFailure === 'the service answered 500 (http_500)',
    });
    await core.deliver(Batch.of([item('a')], 'k'));
    assert.equal(ledger.lastFailure, 'could not reach the service (reset)');
  });

  it('names the URL that could not be reached', async () => {
    const { core, ledger } = at([{ status: null, headers: {}, body: null, failure: 'timeout' }], { sleep: async () => false });
    await core.deliver(Batch.of([item('a')], 'k'));
    assert.equal(ledger.lastFailure, `could not reach ${URL} (timeout)`);
  });

  it('is not set by a final answer, whose rejection names the URL and the status instead', async () => {
    const told: string[] = [];
    const ledger = new Ledger((event) => told.push(event.detail), new Log(() => undefined));
    const { core } = at([{ status: 404, headers: {}, body: { code: 'not_found', detail: 'no such route' } }], { ledger });
    await core.deliver(Batch.of([item('a')], 'k'));
    assert.equal(ledger.lastFailure, undefined);
    assert.deepEqual(told, [`no such route; POST ${URL} answered 404`]);
  });
});
