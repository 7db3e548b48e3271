import type { Harness } from '../../support/ingest-harness.js';
import { DEADLINE_MARGIN_MS } from '../../../lambda/ingest/create-ingest-handler.js';
import { buildBatch, gatewayEvent, lambdaContext } from '../../../devkit/builders/trace-builders.js';
import { freshFaultSetup, type RateTableFake, type StreamFake } from './fault-fakes.js';

/**
 * PutRecords wrote the batch and then never answered, until the function's deadline. A second
 * before it, the handler answers 503 itself (middy's early timeout), saying that part of the batch
 * may have been accepted: it cannot know. Without the early answer API Gateway would send its own
 * 502/504; either way the client resends, as the contract tells it to after any error, and the
 * batch lands twice. Each copy carries its request's request_id, which tells them apart; an
 * Idempotency-Key makes the resend return the first answer instead of publishing again.
 */
const nearDeadline = { ...lambdaContext, getRemainingTimeInMillis: () => DEADLINE_MARGIN_MS + 50 };

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
    const first = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: payload, requestId: 'req-first' }), nearDeadline);
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
    // Each call takes 200 ms, writes, then loses its answer; the deadline answer comes 50 ms in.
    stream.callMs = 200;
    stream.faults.push('timeout-after', 'timeout-after', 'timeout-after', 'timeout-after');
    const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify(buildBatch(3)), requestId: 'req-late' }), nearDeadline);
    expect(JSON.parse(response.body)).toMatchObject({ code: 'unavailable', may_have_been_accepted: true });

    await new Promise((resolve) => setTimeout(resolve, 1_000));

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
});
