import { randomBytes } from 'node:crypto';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { type Harness, s3Mock, TEST_POLICY } from '../../support/ingest-harness.js';
import { buildBatch, buildSpan, buildTrace, gatewayEvent } from '../../../devkit/builders/trace-builders.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import { MAX_UNKNOWN_OUTCOME_CALLS } from '../../../lambda/ingest/adapters/publish/kinesis-trace-sink.js';
import { encodeTraceRecord } from '../../../lambda/shared/domain/trace-record.js';
import { parquetRows } from '../../../devkit/builders/landing-builders.js';
import { type Batch, bodyOf, expectRetryable, freshFaultSetup, type RateTableFake, type StreamFake, traceIdsOf } from './fault-fakes.js';

/**
 * Kinesis faults on the publish step (docs/contract.md §1 row 10). For every fault: a 200 means every
 * accepted trace is on the stream and counted once; a 503 carries Retry-After and gives back the
 * increments of exactly the traces known not to be on the stream, and says "may have been
 * accepted" whenever some may be; rejected traces never reach the stream.
 */
const body = bodyOf;
const ids = traceIdsOf;

let h: Harness;
let rate: RateTableFake;
let stream: StreamFake;
beforeEach(async () => ({ h, rate, stream } = await freshFaultSetup()));

/** Lands everything on the fake stream as one landing batch, into a bucket kept in memory. */
async function landStream(fake: StreamFake) {
  const objects = new Map<string, Uint8Array>();
  const store = { putObject: async (key: string, body: Uint8Array) => void objects.set(key, body), getObject: async () => new Uint8Array() };
  const records = fake.records.map((record, i) => ({
    shardId: 'shardId-000000000000',
    sequenceNumber: String(1000 + i),
    data: encodeTraceRecord(record),
    approximateArrivalTimestamp: new Date(),
  }));
  const summary = await landRecords({ store }, records);
  const traces = [...objects].filter(([key]) => key.startsWith('traces/'));
  const traceIds = (await Promise.all(traces.map(([, bytes]) => parquetRows(bytes)))).flat().map((row) => String(row.trace_id));
  return { summary, traceIds };
}

const post = (batch: Batch, requestId?: string) =>
  h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify(batch), ...(requestId ? { requestId } : {}) }));

describe('Kinesis faults', () => {
  it('partial PutRecords failure once: only the failed entries are resent; 200, each trace once, counted once', async () => {
    stream.faults.push('partial');
    const batch = buildBatch(6);
    const response = await post(batch);
    expect(response.statusCode).toBe(200);
    expect(stream.calls).toBe(2);
    expect(stream.traceIds().sort()).toEqual(ids(batch).sort());
    expect(rate.count('minute')).toBe(6);
  });

  it('partial failures on every attempt: 503 that says part may have been accepted; only the refused entries are given back', async () => {
    stream.faults.push(...Array<'partial'>(TEST_POLICY.maxAttempts).fill('partial'));
    const batch = buildBatch(4);
    const response = await post(batch, 'req-partial');
    expectRetryable(response);
    expect(body(response)).toMatchObject({ may_have_been_accepted: true, detail: expect.stringMatching(/may have been accepted/) });
    expect(stream.calls).toBe(TEST_POLICY.maxAttempts);
    // Three of the four entries were written; the last was refused on every attempt.
    expect(stream.records).toHaveLength(3);
    expect(rate.count('minute')).toBe(3);
    expect(rate.count('month')).toBe(3);
    expect(new Set(stream.records.map((r) => r.context.request_id))).toEqual(new Set(['req-partial']));
  });

  it('a response with FailedRecordCount but no per-entry results is treated as all failed and resent', async () => {
    stream.faults.push('short-response');
    const batch = buildBatch(2);
    expect((await post(batch)).statusCode).toBe(200);
    expect(stream.calls).toBe(2);
    expect(new Set(stream.traceIds())).toEqual(new Set(ids(batch)));
    expect(rate.count('minute')).toBe(2);
  });

  it('throttling (ProvisionedThroughputExceeded) that clears within the retries: 200, each trace once', async () => {
    stream.faults.push('throttle', 'throttle');
    const batch = buildBatch(3);
    expect((await post(batch)).statusCode).toBe(200);
    expect(stream.calls).toBe(3);
    expect(stream.traceIds().sort()).toEqual(ids(batch).sort());
    expect(rate.count('minute')).toBe(3);
  });

  it('throttling that outlasts the retries: 503 + Retry-After, nothing on the stream, counters given back', async () => {
    stream.faults.push(...Array<'throttle'>(TEST_POLICY.maxAttempts).fill('throttle'));
    const response = await post(buildBatch(3));
    expectRetryable(response);
    expect(stream.records).toHaveLength(0);
    expect(rate.count('minute')).toBe(0);
    expect(rate.count('month')).toBe(0);
  });

  it('a timeout before the write: resent, 200, each trace once', async () => {
    stream.faults.push('timeout-before');
    const batch = buildBatch(2);
    expect((await post(batch)).statusCode).toBe(200);
    expect(stream.traceIds().sort()).toEqual(ids(batch).sort());
  });

  it('a timeout after the write (lost response): resent, 200; the copies carry one record_id each and land once', async () => {
    stream.faults.push('timeout-after');
    const batch = buildBatch(2);
    const response = await post(batch, 'req-lost');
    expect(response.statusCode).toBe(200);
    expect(rate.count('minute')).toBe(2);
    // Kinesis has no idempotent put: the copies share their record_id, so the landing keeps one of each.
    expect(stream.traceIds().sort()).toEqual([...ids(batch), ...ids(batch)].sort());
    expect(stream.records.map((r) => r.context.record_id).sort()).toEqual(['req-lost/0', 'req-lost/0', 'req-lost/1', 'req-lost/1']);
    const landed = await landStream(stream);
    expect(landed.summary).toMatchObject({ duplicatesSkipped: 2, rows: { traces: 2 } });
  });

  it('a double that writes every attempt and then times out: sent twice, no more (each call may be one more copy); 503 "may have been accepted", nothing given back, each trace lands once', async () => {
    stream.faults.push(...Array<'timeout-after'>(TEST_POLICY.maxAttempts).fill('timeout-after'));
    const batch = buildBatch(3);
    const response = await post(batch, 'req-unknown');
    expectRetryable(response);
    expect(body(response)).toMatchObject({ may_have_been_accepted: true });
    expect(body(response).detail).not.toMatch(/nothing was accepted/);
    // Every trace may be stored (here: is, four times): the quota keeps counting them.
    expect(rate.count('minute')).toBe(3);
    expect(stream.calls).toBe(MAX_UNKNOWN_OUTCOME_CALLS);
    expect(stream.records).toHaveLength(3 * MAX_UNKNOWN_OUTCOME_CALLS);
    const landed = await landStream(stream);
    expect(landed.summary.rows.traces).toBe(3);
    expect(landed.traceIds.sort()).toEqual(ids(batch).sort());
  });

  it('timeouts on every attempt: 503 "may have been accepted" (a timeout cannot tell before from after), counters kept', async () => {
    stream.faults.push(...Array<'timeout-before'>(TEST_POLICY.maxAttempts).fill('timeout-before'));
    const response = await post(buildBatch(2));
    expectRetryable(response);
    expect(body(response)).toMatchObject({ may_have_been_accepted: true });
    expect(stream.records).toHaveLength(0);
    expect(rate.count('minute')).toBe(2);
  });

  it('a refusal by the service after a timeout still counts the timed-out entries as possibly written', async () => {
    stream.faults.push('timeout-after', ...Array<'throttle'>(TEST_POLICY.maxAttempts - 1).fill('throttle'));
    const response = await post(buildBatch(2));
    expect(body(response)).toMatchObject({ may_have_been_accepted: true });
    expect(rate.count('minute')).toBe(2);
  });

  it('rejected traces never reach the stream, whatever the faults; the counters count only the accepted', async () => {
    stream.faults.push('partial', 'throttle', 'timeout-before');
    const good = buildBatch(3).traces;
    const bad = [buildTrace({ status: 'OK' }), buildTrace({ spans: [buildSpan({ kind: 'robot' })] })];
    const response = await post({ traces: [good[0]!, bad[0]!, good[1]!, bad[1]!, good[2]!] });
    expect(response.statusCode).toBe(200);
    expect(body(response)).toMatchObject({ accepted: 3, rejected: 2 });
    expect(stream.traceIds().sort()).toEqual(good.map((t) => String(t.trace_id)).sort());
    expect(rate.count('minute')).toBe(3);
  });

  it('a resend after a 503 is accepted once and counted once', async () => {
    stream.faults.push(...Array<'throttle'>(TEST_POLICY.maxAttempts).fill('throttle'));
    const batch = buildBatch(4);
    expectRetryable(await post(batch));
    expect((await post(batch)).statusCode).toBe(200);
    expect(stream.traceIds().sort()).toEqual(ids(batch).sort());
    expect(rate.count('minute')).toBe(4);
    expect(rate.count('month')).toBe(4);
  });

  it('publishing fails and the give-back fails too: 503, the counters stay high until their windows pass (the safe direction)', async () => {
    stream.faults.push(...Array<'throttle'>(TEST_POLICY.maxAttempts).fill('throttle'));
    // The reserve goes through; every attempt to give it back is throttled.
    rate.faults.push('none', ...Array<'throttle'>(TEST_POLICY.maxAttempts).fill('throttle'));
    expectRetryable(await post(buildBatch(2)));
    expect(rate.calls).toBe(1 + TEST_POLICY.maxAttempts);
    expect(stream.records).toHaveLength(0);
    expect(rate.count('minute')).toBe(2);
  });
});

describe('S3 overflow faults on the ingest path', () => {
  it('the overflow PutObject fails for an oversized trace: 503, nothing on the stream, counters given back', async () => {
    s3Mock.on(PutObjectCommand).rejects(Object.assign(new Error('slow down'), { name: 'SlowDown', $metadata: {} }));
    const random = randomBytes(1_500_000).toString('base64');
    const batch = { traces: [buildTrace(), buildTrace({ spans: [buildSpan({ output: JSON.stringify(random) })] })] };
    expectRetryable(await post(batch));
    expect(stream.records).toHaveLength(0);
    expect(rate.count('minute')).toBe(0);
    expect(s3Mock.commandCalls(PutObjectCommand)).toHaveLength(1);
  });
});
