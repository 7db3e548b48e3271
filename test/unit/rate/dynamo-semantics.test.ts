import {
  IdempotentParameterMismatchException,
  PutItemCommand,
  TransactionInProgressException,
  TransactionCanceledException,
  TransactionConflictException,
  ProvisionedThroughputExceededException,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { DynamoModel } from '../../../devkit/dynamo/model.js';
import { DynamoSemantics, writeUnits } from '../../../devkit/dynamo/semantics.js';
import { VirtualClock } from '../../../devkit/dynamo/virtual-clock.js';

const target = (pk: string, sk: string, sizeBytes = 100) => ({ table: 't', key: { pk: { S: pk }, sk: { S: sk } }, sizeBytes });
const fixed = () => 0;

describe('DynamoSemantics (the documented conflict and throughput rules)', () => {
  it('charges 2 WCU per started KB per item inside a transaction, 1 outside', () => {
    expect(writeUnits(100, true)).toBe(2);
    expect(writeUnits(1024, true)).toBe(2);
    expect(writeUnits(1025, true)).toBe(4);
    expect(writeUnits(3000, false)).toBe(3);
  });

  it('cancels a transaction touching a held item with TransactionConflict at that index and None elsewhere', () => {
    let now = 0;
    const semantics = new DynamoSemantics(() => now, { holdMs: 15, holdJitterMs: 0, random: fixed });
    expect(semantics.admitTransaction([target('a', '1'), target('a', '2')])).toMatchObject({ admitted: true, holdMs: 15 });
    now = 10;
    expect(semantics.admitTransaction([target('b', '1'), target('a', '2'), target('a', '3')])).toEqual({
      admitted: false,
      reasons: ['None', 'TransactionConflict', 'None'],
    });
    now = 15;
    expect(semantics.admitTransaction([target('a', '2')])).toMatchObject({ admitted: true });
  });

  it('refuses a single-item write to a held item with TransactionConflictException, not other items', () => {
    let now = 0;
    const semantics = new DynamoSemantics(() => now, { holdMs: 15, holdJitterMs: 0, random: fixed });
    semantics.admitTransaction([target('a', '1')]);
    now = 5;
    expect(semantics.admitSingleWrite(target('a', '1'))).toEqual({ admitted: false, error: 'TransactionConflictException' });
    expect(semantics.admitSingleWrite(target('a', '2'))).toEqual({ admitted: true, wcu: 1 });
  });

  it('throttles one partition at 1,000 WCU/s: 100 transactions of 5 small items fit in a second, the 101st does not', () => {
    let now = 0;
    const semantics = new DynamoSemantics(() => now, { holdMs: 0, holdJitterMs: 0, random: fixed });
    for (let i = 0; i < 100; i++) {
      expect(semantics.admitTransaction([0, 1, 2, 3, 4].map((j) => target('RATE#org', `${i}-${j}`)))).toMatchObject({ admitted: true });
    }
    const refused = semantics.admitTransaction([target('RATE#org', 'x'), target('OTHER', 'y')]);
    expect(refused).toEqual({ admitted: false, reasons: ['ThrottlingError', 'None'] });
    expect(semantics.admitSingleWrite(target('RATE#org', 'z'))).toEqual({ admitted: false, error: 'ProvisionedThroughputExceededException' });
    now = 100; // a tenth of a second refills 100 WCU
    expect(semantics.admitTransaction([target('RATE#org', 'x')])).toMatchObject({ admitted: true, wcu: 2 });
  });

  it('throttles one item at 1,000 WCU/s even when its partition has room', () => {
    const semantics = new DynamoSemantics(() => 0, { holdMs: 0, holdJitterMs: 0, partitionWcuPerSecond: 10_000, random: fixed });
    for (let i = 0; i < 500; i++) expect(semantics.admitTransaction([target('p', 'hot')])).toMatchObject({ admitted: true });
    expect(semantics.admitTransaction([target('p', 'hot')])).toEqual({ admitted: false, reasons: ['ThrottlingError'] });
  });
});

describe('DynamoModel answers with the SDK exception classes', () => {
  const update = (sk: string, n: number, room: number) => ({
    Update: {
      TableName: 't',
      Key: { pk: { S: 'p' }, sk: { S: sk } },
      UpdateExpression: 'ADD #c :n',
      ConditionExpression: 'attribute_not_exists(#c) OR #c <= :room',
      ExpressionAttributeNames: { '#c': 'count' },
      ExpressionAttributeValues: { ':n': { N: String(n) }, ':room': { N: String(room) } },
    },
  });

  it('conflict, condition failure, idempotent token and single-write conflict', async () => {
    const clock = new VirtualClock(0);
    const model = new DynamoModel(clock, { roundTripMs: 2, semantics: { holdMs: 15, holdJitterMs: 0 }, random: fixed });
    const client = model.client();
    const first = client.send(new TransactWriteItemsCommand({ TransactItems: [update('a', 5, 5)], ClientRequestToken: 'tok' }));
    const second = client.send(new TransactWriteItemsCommand({ TransactItems: [update('b', 1, 9), update('a', 1, 9)] })).catch((e: unknown) => e);
    const single = client
      .send(new PutItemCommand({ TableName: 't', Item: { pk: { S: 'p' }, sk: { S: 'a' } } }))
      .catch((e: unknown) => e);
    await clock.run();
    await expect(first).resolves.toBeDefined();
    const conflict = await second;
    expect(conflict).toBeInstanceOf(TransactionCanceledException);
    expect((conflict as TransactionCanceledException).CancellationReasons?.map((r) => r.Code)).toEqual(['None', 'TransactionConflict']);
    expect(await single).toBeInstanceOf(TransactionConflictException);

    const full = client.send(new TransactWriteItemsCommand({ TransactItems: [update('a', 1, 4)] })).catch((e: unknown) => e);
    const again = client.send(new TransactWriteItemsCommand({ TransactItems: [update('a', 5, 5)], ClientRequestToken: 'tok' }));
    await clock.run();
    expect(((await full) as TransactionCanceledException).CancellationReasons?.map((r) => r.Code)).toEqual(['ConditionalCheckFailed']);
    await again;
    expect(model.get('t', { pk: { S: 'p' }, sk: { S: 'a' } })?.count).toEqual({ N: '5' });
  });

  it('a reused ClientRequestToken: other parameters get IdempotentParameterMismatchException, an original still in flight TransactionInProgressException', async () => {
    const clock = new VirtualClock(0);
    const model = new DynamoModel(clock, { roundTripMs: 2, semantics: { holdMs: 15, holdJitterMs: 0 }, random: fixed });
    const client = model.client();
    const send = (n: number) => client.send(new TransactWriteItemsCommand({ TransactItems: [update('a', n, 100)], ClientRequestToken: 'tok' })).catch((e: unknown) => e);
    const original = send(5);
    await clock.run(5); // applied at 1 ms, holding its items until 16 ms
    const inFlight = send(5);
    const mismatch = send(6);
    await clock.run(30);
    expect(await original).not.toBeInstanceOf(Error);
    expect(await inFlight).toBeInstanceOf(TransactionInProgressException);
    expect(await mismatch).toBeInstanceOf(IdempotentParameterMismatchException);
    const later = send(5);
    await clock.run();
    expect(await later).not.toBeInstanceOf(Error);
    expect(model.get('t', { pk: { S: 'p' }, sk: { S: 'a' } })?.count).toEqual({ N: '5' });
  });

  it('a single UpdateItem over the partition limit gets ProvisionedThroughputExceededException', async () => {
    const clock = new VirtualClock(0);
    const model = new DynamoModel(clock, { roundTripMs: 0, semantics: { partitionWcuPerSecond: 2 }, random: fixed });
    const send = () =>
      model
        .client()
        .send(new UpdateItemCommand({ TableName: 't', Key: { pk: { S: 'p' }, sk: { S: 'x' } }, UpdateExpression: 'ADD n :one', ExpressionAttributeValues: { ':one': { N: '1' } } }))
        .catch((e: unknown) => e);
    const outcomes = [send(), send(), send()];
    await clock.run();
    expect(await outcomes[2]).toBeInstanceOf(ProvisionedThroughputExceededException);
  });
});
