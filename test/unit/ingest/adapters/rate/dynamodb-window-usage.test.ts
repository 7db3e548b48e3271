import { BatchGetItemCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { DynamoDbWindowUsage } from '../../../../../lambda/ingest/adapters/rate/dynamodb-window-usage.js';
import { countersFor } from '../../../../../lambda/shared/domain/rate-windows.js';

/** The BatchGetItem that reads an organization's window counters, and what it makes of the answer. */

const TABLE = 'rate';
const AT = new Date(Date.UTC(2026, 10, 22, 10, 4, 30));
const COUNTERS = countersFor({ minute: 100, hour: 1_000, day: null, month: 100_000 }, AT);
const key = (sk: string) => ({ pk: { S: 'RATE#acme' }, sk: { S: sk } });
const KEYS = [key('minute#2026-11-22T10:04Z'), key('hour#2026-11-22T10Z'), key('month#2026-11')];
const item = (sk: string, count: number) => ({ sk: { S: sk }, count: { N: String(count) } });

const ddb = mockClient(DynamoDBClient);
const usage = (consistentRead?: boolean) => new DynamoDbWindowUsage(new DynamoDBClient({ region: 'eu-west-1' }), TABLE, consistentRead);
beforeEach(() => ddb.reset());

describe('DynamoDbWindowUsage', () => {
  it('reads every window\'s counter in one eventually consistent BatchGetItem of the count alone', async () => {
    ddb.on(BatchGetItemCommand).resolves({ Responses: { [TABLE]: [item('minute#2026-11-22T10:04Z', 7), item('month#2026-11', 700)] } });
    await expect(usage().read('acme', COUNTERS)).resolves.toEqual({ minute: 7, hour: 0, month: 700 });
    expect(ddb).toHaveReceivedCommandTimes(BatchGetItemCommand, 1);
    expect(ddb).toHaveReceivedCommandWith(BatchGetItemCommand, {
      RequestItems: { [TABLE]: { Keys: KEYS, ConsistentRead: false, ProjectionExpression: 'sk, #count', ExpressionAttributeNames: { '#count': 'count' } } },
    });
  });

  it('reads strongly consistent where asked (admin org usage)', async () => {
    ddb.on(BatchGetItemCommand).resolves({ Responses: { [TABLE]: [] } });
    await expect(usage(true).read('acme', COUNTERS)).resolves.toEqual({ minute: 0, hour: 0, month: 0 });
    expect(ddb).toHaveReceivedCommandWith(BatchGetItemCommand, { RequestItems: { [TABLE]: expect.objectContaining({ ConsistentRead: true }) } });
  });

  it('asks again for the keys DynamoDB left unprocessed, and only for those', async () => {
    ddb
      .on(BatchGetItemCommand)
      .resolvesOnce({ Responses: { [TABLE]: [item('minute#2026-11-22T10:04Z', 7)] }, UnprocessedKeys: { [TABLE]: { Keys: KEYS.slice(1) } } })
      .resolvesOnce({ Responses: { [TABLE]: [item('hour#2026-11-22T10Z', 70)] }, UnprocessedKeys: { [TABLE]: { Keys: KEYS.slice(2) } } })
      .resolvesOnce({ Responses: { [TABLE]: [item('month#2026-11', 700)] }, UnprocessedKeys: {} });
    await expect(usage().read('acme', COUNTERS)).resolves.toEqual({ minute: 7, hour: 70, month: 700 });
    expect(ddb).toHaveReceivedCommandTimes(BatchGetItemCommand, 3);
    expect(ddb).toHaveReceivedNthCommandWith(2, BatchGetItemCommand, { RequestItems: { [TABLE]: expect.objectContaining({ Keys: KEYS.slice(1) }) } });
    expect(ddb).toHaveReceivedNthCommandWith(3, BatchGetItemCommand, { RequestItems: { [TABLE]: expect.objectContaining({ Keys: KEYS.slice(2) }) } });
  });

  it('gives up with an error after three reads that leave keys unprocessed', async () => {
    // Past 10 reads the fake fails otherwise: a read that never gives up fails the test instead of hanging it.
    let reads = 0;
    ddb.on(BatchGetItemCommand).callsFake(async () => {
      if (++reads > 10) throw new Error('read 10 times');
      return { Responses: { [TABLE]: [] }, UnprocessedKeys: { [TABLE]: { Keys: KEYS.slice(2) } } };
    });
    await expect(usage().read('acme', COUNTERS)).rejects.toThrow('rate-window counters not read: DynamoDB left keys unprocessed');
    expect(ddb).toHaveReceivedCommandTimes(BatchGetItemCommand, 3);
  });

  it('ignores items of keys it did not ask for and reads a counter without a count as 0', async () => {
    ddb.on(BatchGetItemCommand).resolves({ Responses: { [TABLE]: [item('minute#2026-11-22T10:03Z', 99), { sk: { S: 'hour#2026-11-22T10Z' } }, { count: { N: '5' } }] } });
    await expect(usage().read('acme', COUNTERS)).resolves.toEqual({ minute: 0, hour: 0, month: 0 });
  });

  it('reads nothing when no window has a quota', async () => {
    await expect(usage().read('acme', [])).resolves.toEqual({});
    expect(ddb).toHaveReceivedCommandTimes(BatchGetItemCommand, 0);
  });
});
