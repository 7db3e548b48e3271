import { GetItemCommand, ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { ddbMock, type Harness, TEST_POLICY } from '../../support/ingest-harness.js';
import { buildBatch, gatewayEvent } from '../../../devkit/builders/trace-builders.js';
import { type Batch, type DynamoFault, expectRetryable, freshFaultSetup, type RateTableFake, type StreamFake, traceIdsOf } from './fault-fakes.js';

/**
 * DynamoDB faults on the rate-window transaction and the tenancy reads. A 200 means the batch is
 * on the stream and counted exactly once; a 503 (with Retry-After) means nothing was published and
 * the counters are as they were; a 429 is a quota verdict, never a fault.
 */
const ids = traceIdsOf;

let h: Harness;
let rate: RateTableFake;
let stream: StreamFake;
beforeEach(async () => ({ h, rate, stream } = await freshFaultSetup()));

const post = (batch: Batch) => h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify(batch) }));
const times = (fault: DynamoFault, n: number) => Array<DynamoFault>(n).fill(fault);

describe('DynamoDB faults on the rate-window transaction', () => {
  it.each<[string, DynamoFault]>([
    ['throttling (ProvisionedThroughputExceeded)', 'throttle'],
    ['a cancellation for ThrottlingError', 'throttle-reason'],
    ['a TransactionConflict', 'conflict'],
    ['a timeout before the request reached DynamoDB', 'timeout-before'],
  ])('%s that clears within the retries: 200, published once, counted once', async (_, fault) => {
    rate.faults.push(...times(fault, TEST_POLICY.maxAttempts - 1));
    const batch = buildBatch(3);
    expect((await post(batch)).statusCode).toBe(200);
    expect(rate.calls).toBe(TEST_POLICY.maxAttempts);
    expect(stream.traceIds().sort()).toEqual(ids(batch).sort());
    expect(rate.count('minute')).toBe(3);
    expect(rate.count('month')).toBe(3);
  });

  it.each<[string, DynamoFault]>([
    ['throttling', 'throttle'],
    ['a TransactionConflict storm', 'conflict'],
    ['timeouts before the request', 'timeout-before'],
  ])('%s that outlasts the retries: 503 + Retry-After, nothing published, no counter moved', async (_, fault) => {
    rate.faults.push(...times(fault, TEST_POLICY.maxAttempts));
    expectRetryable(await post(buildBatch(3)));
    // Every reserve attempt, then one conditional give-back that finds no reservation to undo.
    expect(rate.calls).toBe(TEST_POLICY.maxAttempts + 1);
    expect(stream.records).toHaveLength(0);
    expect(rate.count('minute')).toBe(0);
  });

  it('a lost response (applied, then timed out) is retried with the same ClientRequestToken: 200, counted once', async () => {
    rate.faults.push('timeout-after');
    const batch = buildBatch(4);
    expect((await post(batch)).statusCode).toBe(200);
    expect(rate.calls).toBe(2);
    expect(rate.count('minute')).toBe(4);
    expect(stream.traceIds().sort()).toEqual(ids(batch).sort());
  });

  it('a conflict storm over many concurrent batches: every 200 is published and counted once, every 503 neither', async () => {
    // Each call has a 50% chance of a conflict; 40 batches race with the retries of the test policy.
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    rate.faults.push(...Array.from({ length: 400 }, (): DynamoFault => (random() < 0.5 ? 'conflict' : 'none')));
    const batches = Array.from({ length: 40 }, () => buildBatch(2, {}, 1));
    const responses = await Promise.all(batches.map(post));
    const accepted = batches.filter((_, i) => responses[i]?.statusCode === 200);
    const refused = responses.filter((r) => r.statusCode !== 200);
    for (const response of refused) expectRetryable(response);
    expect(accepted.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    expect(rate.count('minute')).toBe(accepted.length * 2);
    expect(stream.traceIds().sort()).toEqual(accepted.flatMap(ids).sort());
  });

  it('a quota verdict during a storm is a 429, not a 503, and is not retried', async () => {
    ({ h, rate, stream } = await freshFaultSetup({ quotas: { minute: 3 } }));
    expect((await post(buildBatch(2))).statusCode).toBe(200);
    rate.faults.push('conflict');
    const response = await post(buildBatch(2));
    expect(response.statusCode).toBe(429);
    expect(response.headers?.['Retry-After']).toBe('60');
    expect(rate.calls).toBe(3);
    expect(rate.count('minute')).toBe(2);
    expect(stream.records).toHaveLength(2);
  });

  it(
    'a reserve whose every attempt timed out after applying: 503, and the counters end as they were (the marker makes the give-back exact)',
    async () => {
      // The first attempt applied; every retry (same token, so not applied again) timed out as well.
      rate.faults.push(...times('timeout-after', TEST_POLICY.maxAttempts));
      expectRetryable(await post(buildBatch(3)));
      expect(stream.records).toHaveLength(0);
      expect(rate.count('minute')).toBe(0);
    },
  );
});

describe('DynamoDB faults on the tenancy reads', () => {
  it('throttled GetItem on the key lookup: 503 + Retry-After, no counter, nothing published', async () => {
    ddbMock.on(GetItemCommand).rejects(new ProvisionedThroughputExceededException({ message: 'slow down', $metadata: {} }));
    expectRetryable(await post(buildBatch(2)));
    expect(rate.calls).toBe(0);
    expect(stream.records).toHaveLength(0);
  });

  it('a GetItem timeout is not cached: the next request, with DynamoDB back, is accepted', async () => {
    const realGetItem = ddbMock.commandCalls(GetItemCommand).length;
    expect(realGetItem).toBe(0);
    const items = h.items;
    ddbMock
      .on(GetItemCommand)
      .rejectsOnce(Object.assign(new Error('socket timed out'), { name: 'TimeoutError', $metadata: {} }))
      .callsFake((input) => ({ Item: items.get(`${input.Key?.pk?.S}|${input.Key?.sk?.S}`) }));
    expectRetryable(await post(buildBatch(1)));
    const batch = buildBatch(1);
    expect((await post(batch)).statusCode).toBe(200);
    expect(stream.traceIds()).toEqual(ids(batch));
    expect(rate.count('minute')).toBe(1);
  });
});
