import type { Harness } from '../../support/ingest-harness.js';
import { DEADLINE_MARGIN_MS } from '../../../lambda/ingest/create-ingest-handler.js';
import { MIN_PUBLISH_CALL_MS } from '../../../lambda/ingest/adapters/publish/kinesis-trace-sink.js';
import { buildBatch, gatewayEvent, lambdaContext } from '../../../devkit/builders/trace-builders.js';
import { freshFaultSetup, type RateTableFake, type StreamFake } from './fault-fakes.js';
import type { IdempotencyStore } from '../../../lambda/ingest/core/idempotency/ports.js';

/**
 * PutRecords wrote the batch and then never answered, until the function's deadline. Two seconds
 * before it the work is told to stop, winds down and answers 503 itself (middy's early timeout, half a
 * second before, if it does not), saying that part of the batch may have been accepted: it cannot know. Without the early answer API Gateway would send its own
 * 502/504; either way the client resends, as the contract tells it to after any error, and the
 * batch lands twice. Each copy carries its request's request_id, which tells them apart; an
 * Idempotency-Key makes the resend return the first answer instead of publishing again.
 */
const nearDeadline = { ...lambdaContext, getRemainingTimeInMillis: () => DEADLINE_MARGIN_MS + 50 };
/** Time for the work before the publish (milliseconds on these fakes) and for a call to start, and then the deadline. */
const deadlineDuringPublish = { ...lambdaContext, getRemainingTimeInMillis: () => DEADLINE_MARGIN_MS + MIN_PUBLISH_CALL_MS + 1_500 };

describe('a Lambda timeout between publishing and answering', () => {
  let h: Harness;
  let rate: RateTableFake;
  let stream: StreamFake;
  beforeEach(async () => ({ h, rate, stream } = await freshFaultSetup()));

  it('the client gets a 503 at the deadline and resends: the batch lands twice, once per request_id, and is counted twice', async () => {
    const batch = buildBatch(3);
    const payload = JSON.stringify(batch);
    const sent = batch.traces.map((t) => String(t.trace_id)).sort();

    stream.hangAfterWrite = true;
    const first = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: payload, requestId: 'req-first' }), deadlineDuringPublish);
    expect(first.statusCode).toBe(503);
    expect(first.headers?.['Retry-After']).toBe('5');
    expect(JSON.parse(first.body)).toMatchObject({ code: 'unavailable', may_have_been_accepted: true, detail: expect.stringMatching(/did not finish in time.*may have been accepted.*Idempotency-Key/) });
    // Already on the stream and counted, though the client never heard back.
    expect(stream.traceIds().sort()).toEqual(sent);
    expect(rate.count('minute')).toBe(3);

    stream.hangAfterWrite = false;
    const resent = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: payload, requestId: 'req-resend' }));
    expect(resent.statusCode).toBe(200);

    // Nothing accepted is lost; the timed-out batch is there twice, identifiable by request_id.
    expect(stream.traceIds().sort()).toEqual([...sent, ...sent].sort());
    const byRequest = new Map<string, string[]>();
    for (const record of stream.records) byRequest.set(record.context.request_id, [...(byRequest.get(record.context.request_id) ?? []), record.trace.trace_id]);
    expect([...byRequest.keys()].sort()).toEqual(['req-first', 'req-resend']);
    for (const traceIds of byRequest.values()) expect(traceIds.sort()).toEqual(sent);
    // The first request's reservation is never given back: the windows count the batch twice.
    expect(rate.count('minute')).toBe(6);
  });

  it('stops publishing once it has answered at the deadline: no resend of a timed-out PutRecords reaches the stream after the 503', async () => {
    // Each call takes 3.5 s, writes, then loses its answer; the deadline comes 2 s in, during the first call.
    stream.callMs = 3_500;
    stream.faults.push('timeout-after', 'timeout-after', 'timeout-after', 'timeout-after');
    const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify(buildBatch(3)), requestId: 'req-late' }), deadlineDuringPublish);
    expect(JSON.parse(response.body)).toMatchObject({ code: 'unavailable', may_have_been_accepted: true });

    await new Promise((resolve) => setTimeout(resolve, 3_000));

    expect({ calls: stream.calls, records: stream.records.length }).toEqual({ calls: 1, records: 3 });
    expect(rate.count('minute')).toBe(3);
  });

  it('publishes nothing when the deadline passed before the publish began, and gives the quota back', async () => {
    rate.delayMs = 200;
    const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify(buildBatch(3)), requestId: 'req-slow-reserve' }), nearDeadline);
    expect(response.statusCode).toBe(503);

    await new Promise((resolve) => setTimeout(resolve, 1_000));

    expect({ calls: stream.calls, records: stream.records.length, minute: rate.count('minute') }).toEqual({ calls: 0, records: 0, minute: 0 });
  });

  it("one request's deadline does not stop another request running beside it in the same module", async () => {
    // middy 6 keeps one AbortController per module; the local stack runs concurrent requests in one process.
    rate.delayMs = 100;
    const [late, onTime] = await Promise.all([
      h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify(buildBatch(2)), requestId: 'req-late' }), nearDeadline),
      h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify(buildBatch(3)), requestId: 'req-on-time' })),
    ]);
    expect(late.statusCode).toBe(503);
    expect(onTime.statusCode).toBe(200);
    expect(JSON.parse(onTime.body)).toMatchObject({ accepted: 3 });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(stream.records.filter((r) => r.context.request_id === 'req-on-time')).toHaveLength(3);
  });

  it('gives the quota back and releases its Idempotency-Key claim before it answers the deadline 503, not at the next thaw', async () => {
    // A frozen Lambda environment runs nothing after the answer: what is not done before it waits for the next thaw.
    const events: string[] = [];
    const idempotency: IdempotencyStore = {
      claim: async () => (events.push('claim'), { kind: 'claimed' }),
      complete: async () => true,
      release: async () => {
        await new Promise((resolve) => setTimeout(resolve, 100));
        events.push('release');
      },
    };
    ({ h, rate, stream } = await freshFaultSetup({ idempotency }));
    // The reserve is still running when the deadline comes (50 ms in), then the quota must be given back.
    rate.delayMs = 200;

    const response = await h.invoke(
      gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify(buildBatch(3)), requestId: 'req-deadline', headers: { 'Idempotency-Key': 'key-deadline' } }),
      nearDeadline,
    );
    events.push(`answered ${response.statusCode}`);

    expect(events).toEqual(['claim', 'release', 'answered 503']);
    expect({ transactions: rate.calls, minute: rate.count('minute'), published: stream.calls }).toEqual({ transactions: 2, minute: 0, published: 0 });
    expect(JSON.parse(response.body)).toMatchObject({ code: 'unavailable' });
    expect(JSON.parse(response.body)).not.toHaveProperty('may_have_been_accepted');
  });
});
