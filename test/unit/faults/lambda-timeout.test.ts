import type { APIGatewayProxyResult } from 'aws-lambda';
import { createHarness, type Harness } from '../../support/ingest-harness.js';
import { buildBatch, gatewayEvent } from '../../support/trace-builders.js';
import { RateTableFake, StreamFake } from './fault-fakes.js';

/**
 * The Lambda times out (or is killed) after PutRecords wrote the batch and before the handler
 * answered. Nothing in the function can run any more, so the outcome is fixed by the platform:
 * API Gateway answers the client with a 5xx of its own (504 after its 29 s, or 502 when the
 * function dies), the client resends as the contract tells it to after any error, and the batch
 * lands twice. Each copy carries its request's request_id, which tells them apart. Without an
 * Idempotency-Key nothing can prevent it; the key (issue 6, "Safe retries") makes the resend return
 * the first answer instead of publishing again.
 */
const LAMBDA_TIMEOUT = Symbol('lambda timeout');
const withTimeout = (promise: Promise<APIGatewayProxyResult>, ms: number) =>
  Promise.race([promise, new Promise<typeof LAMBDA_TIMEOUT>((resolve) => setTimeout(() => resolve(LAMBDA_TIMEOUT), ms))]);

describe('a Lambda timeout between publishing and answering', () => {
  let h: Harness;
  let rate: RateTableFake;
  let stream: StreamFake;
  beforeEach(async () => {
    h = await createHarness();
    rate = new RateTableFake().install();
    stream = new StreamFake().install();
  });

  it('the client sees a timeout and resends: the batch lands twice, once per request_id, and is counted twice', async () => {
    const batch = buildBatch(3);
    const payload = JSON.stringify(batch);
    const sent = batch.traces.map((t) => String(t.trace_id)).sort();

    stream.hangAfterWrite = true;
    const first = await withTimeout(h.invoke(gatewayEvent({ apiKey: h.orgKey, body: payload, requestId: 'req-first' })), 50);
    expect(first).toBe(LAMBDA_TIMEOUT);
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
});
