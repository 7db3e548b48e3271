import { createHash } from 'node:crypto';
import { DynamoDBClient, TransactionCanceledException, TransactWriteItemsCommand, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { DynamoDbRateLimiter } from '../../../../../lambda/ingest/adapters/rate/dynamodb-rate-limiter.js';
import { LeasingRateLimiter } from '../../../../../lambda/ingest/core/rate/leasing-rate-limiter.js';
import { WindowContentionError } from '../../../../../lambda/ingest/core/rate/ports.js';
import { DependencyUnavailableError } from '../../../../../lambda/shared/domain/errors.js';
import { countersFor } from '../../../../../lambda/shared/domain/rate-windows.js';
import type { Quotas } from '../../../../../lambda/shared/domain/tenancy.js';

/**
 * The exact TransactWriteItems the rate limiter sends: the conditions and markers are what keep the
 * windows from being exceeded or counted twice, so each item is pinned, not just the outcome.
 */

const TABLE = 'rate';
const AT = new Date(Date.UTC(2026, 10, 22, 10, 4, 30));
const QUOTAS: Quotas = { minute: 1_000, hour: 20_000, day: 200_000, month: 2_000_000 };
const COUNTERS = countersFor(QUOTAS, AT);
/** Each window's item is kept a day past the window's end. */
const EXPIRES = { minute: Date.UTC(2026, 10, 22, 10, 5) / 1000 + 86_400, hour: Date.UTC(2026, 10, 22, 11) / 1000 + 86_400, day: Date.UTC(2026, 10, 23) / 1000 + 86_400, month: Date.UTC(2026, 11, 1) / 1000 + 86_400 };
const WINDOW_KEYS = [
  ['minute', 'minute#2026-11-22T10:04Z'],
  ['hour', 'hour#2026-11-22T10Z'],
  ['day', 'day#2026-11-22'],
  ['month', 'month#2026-11'],
] as const;

/**
 * The idempotency token: the first 36 characters (DynamoDB's limit,
 * https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html) of the
 * base64url SHA-256 of request id, purpose and generation, so a retry of an unknown outcome reuses it.
 */
const token = (requestId: string, purpose: string, generation = 0) => createHash('sha256').update(`${requestId}:${purpose}:${generation}`).digest('base64url').slice(0, 36);

/** Adds `count` to each window's counter if the window stays within its quota. */
const increments = (count: number, quotas: Quotas = QUOTAS): TransactWriteItem[] =>
  WINDOW_KEYS.map(([window, sk]) => ({
    Update: {
      TableName: TABLE,
      Key: { pk: { S: 'RATE#acme' }, sk: { S: sk } },
      UpdateExpression: 'ADD #count :n SET #expires = if_not_exists(#expires, :expires)',
      ConditionExpression: 'attribute_not_exists(#count) OR #count <= :room',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      ExpressionAttributeNames: { '#count': 'count', '#expires': 'expires_at' },
      ExpressionAttributeValues: { ':n': { N: String(count) }, ':room': { N: String(Number(quotas[window]) - count) }, ':expires': { N: String(EXPIRES[window]) } },
    },
  }));

/** Takes `count` off each window's counter, unconditionally. */
const decrements = (count: number): TransactWriteItem[] =>
  WINDOW_KEYS.map(([, sk]) => ({
    Update: {
      TableName: TABLE,
      Key: { pk: { S: 'RATE#acme' }, sk: { S: sk } },
      UpdateExpression: 'ADD #count :minus',
      ExpressionAttributeNames: { '#count': 'count' },
      ExpressionAttributeValues: { ':minus': { N: String(-count) } },
    },
  }));

/** The marker a reserve writes, once: it expires with the shortest window. */
const putMarker = (id: string, count: number): TransactWriteItem => ({
  Put: {
    TableName: TABLE,
    Item: { pk: { S: 'RATE#acme' }, sk: { S: `reservation#${id}` }, count: { N: String(count) }, expires_at: { N: String(EXPIRES.minute) } },
    ConditionExpression: 'attribute_not_exists(pk)',
  },
});

/** A release deletes the marker, and fails (giving nothing back) where there is none. */
const deleteMarker = (id: string): TransactWriteItem => ({
  Delete: { TableName: TABLE, Key: { pk: { S: 'RATE#acme' }, sk: { S: `reservation#${id}` } }, ConditionExpression: 'attribute_exists(pk)' },
});

const cancelled = (...codes: (string | { Code: string; count: number })[]) =>
  new TransactionCanceledException({
    message: 'Transaction cancelled',
    $metadata: {},
    CancellationReasons: codes.map((code) => (typeof code === 'string' ? { Code: code } : { Code: code.Code, Item: { count: { N: String(code.count) } } })),
  });

const ddb = mockClient(DynamoDBClient);
const limiter = () => new DynamoDbRateLimiter(new DynamoDBClient({ region: 'eu-west-1' }), TABLE, { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1 }, async () => undefined);
beforeEach(() => ddb.reset());
// The matchers compare the input's fields given, so this pins that there are no others.
afterEach(() => {
  for (const call of ddb.commandCalls(TransactWriteItemsCommand)) expect(Object.keys(call.args[0].input).sort()).toEqual(['ClientRequestToken', 'TransactItems']);
});

describe('DynamoDbRateLimiter sends', () => {

  it('for a reserve, one transaction: a conditional increment per window and the request\'s marker, under the request\'s token', async () => {
    ddb.on(TransactWriteItemsCommand).resolves({});
    await expect(limiter().reserve('acme', COUNTERS, 7, 'req-1')).resolves.toEqual({ allowed: true });
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteItemsCommand, 1);
    expect(ddb).toHaveReceivedCommandWith(TransactWriteItemsCommand, { TransactItems: [...increments(7), putMarker('req-1', 7)], ClientRequestToken: token('req-1', 'reserve') });
    expect(token('req-1', 'reserve')).toHaveLength(36);
  });

  it('for a release, one transaction: the marker deleted if it exists and the count taken off every window, under a token of its own', async () => {
    ddb.on(TransactWriteItemsCommand).resolves({});
    await limiter().release('acme', COUNTERS, 7, 'req-1');
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteItemsCommand, 1);
    expect(ddb).toHaveReceivedCommandWith(TransactWriteItemsCommand, { TransactItems: [deleteMarker('req-1'), ...decrements(7)], ClientRequestToken: token('req-1', 'release') });
    expect(token('req-1', 'release')).not.toBe(token('req-1', 'reserve'));
  });

  it('for a give-back, one transaction: a negative marker written once and the count taken off every window', async () => {
    ddb.on(TransactWriteItemsCommand).resolves({});
    await limiter().giveBack('acme', COUNTERS, 3, 'req-9');
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteItemsCommand, 1);
    expect(ddb).toHaveReceivedCommandWith(TransactWriteItemsCommand, { TransactItems: [putMarker('giveback-req-9', -3), ...decrements(3)], ClientRequestToken: token('req-9', 'give-back') });
  });

  it('the same transaction again under the same token after an unknown outcome, so DynamoDB applies it at most once', async () => {
    ddb.on(TransactWriteItemsCommand).rejectsOnce(new Error('socket hang up')).resolves({});
    await expect(limiter().reserve('acme', COUNTERS, 7, 'req-1')).resolves.toEqual({ allowed: true });
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteItemsCommand, 2);
    for (const n of [1, 2]) {
      expect(ddb).toHaveReceivedNthCommandWith(n, TransactWriteItemsCommand, { TransactItems: [...increments(7), putMarker('req-1', 7)], ClientRequestToken: token('req-1', 'reserve') });
    }
  });

  it('the same transaction under the next token after a definite cancellation (a conflict), which DynamoDB would otherwise answer from its idempotency cache', async () => {
    ddb.on(TransactWriteItemsCommand).rejectsOnce(cancelled('TransactionConflict', 'None', 'None', 'None', 'None')).resolves({});
    await limiter().release('acme', COUNTERS, 7, 'req-1');
    expect(ddb).toHaveReceivedNthCommandWith(1, TransactWriteItemsCommand, { TransactItems: [deleteMarker('req-1'), ...decrements(7)], ClientRequestToken: token('req-1', 'release', 0) });
    expect(ddb).toHaveReceivedNthCommandWith(2, TransactWriteItemsCommand, { TransactItems: [deleteMarker('req-1'), ...decrements(7)], ClientRequestToken: token('req-1', 'release', 1) });
  });

  it('nothing more when a window is full: the refusal names it with the count DynamoDB returned', async () => {
    ddb.on(TransactWriteItemsCommand).rejects(cancelled('None', { Code: 'ConditionalCheckFailed', count: 19_995 }, 'None', 'None', 'None'));
    await expect(limiter().reserve('acme', COUNTERS, 7, 'req-1')).resolves.toEqual({ allowed: false, overflowing: [{ ...COUNTERS[1], used: 19_995 }] });
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteItemsCommand, 1);
  });

  it('nothing more when the marker exists: an earlier attempt of the request was applied', async () => {
    ddb.on(TransactWriteItemsCommand).rejects(cancelled('None', 'None', 'None', 'None', 'ConditionalCheckFailed'));
    await expect(limiter().reserve('acme', COUNTERS, 7, 'req-1')).resolves.toEqual({ allowed: true });
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteItemsCommand, 1);
  });

  it('one attempt, under a token of its own scope, for a limiter derived with withAttempts (the leasing limiter\'s probe)', async () => {
    ddb.on(TransactWriteItemsCommand).rejects(cancelled('TransactionConflict', 'None', 'None', 'None', 'None'));
    await expect(limiter().withAttempts(1, 'probe-').reserve('acme', COUNTERS, 7, 'req-1')).rejects.toBeInstanceOf(DependencyUnavailableError);
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteItemsCommand, 1);
    expect(ddb).toHaveReceivedCommandWith(TransactWriteItemsCommand, { TransactItems: [...increments(7), putMarker('req-1', 7)], ClientRequestToken: token('req-1', 'probe-reserve') });
  });
});

describe('DynamoDbRateLimiter gives up', () => {
  it.each(['TransactionConflict', 'ThrottlingError'])('on contention (%s) with the domain WindowContentionError, the cancellation kept as its cause', async (code) => {
    const cancellation = cancelled(code, 'None', 'None', 'None', 'None');
    ddb.on(TransactWriteItemsCommand).rejects(cancellation);
    const error = await limiter().reserve('acme', COUNTERS, 7, 'req-1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WindowContentionError);
    expect(error).toMatchObject({ name: 'WindowContentionError', dependency: 'dynamodb', message: 'rate-window transaction (reserve) failed after retries', cause: cancellation });
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteItemsCommand, 3);
  });

  // Throttling of the table (throughput, request limit) is retried and counts toward the organization being hot
  // (contentionCount, what the leasing limiter reads), but only a conflict or ThrottlingError gives up as contention.
  it.each([
    ['a failure of unknown outcome', new Error('socket hang up'), 0],
    ['a cancellation for provisioned throughput', cancelled('ProvisionedThroughputExceeded', 'None', 'None', 'None', 'None'), 3],
    ['a cancellation for the table\'s request limit', cancelled('RequestLimitExceeded', 'None', 'None', 'None', 'None'), 3],
    ['a cancellation that names no item', cancelled('None', 'None', 'None', 'None', 'None'), 0],
  ])('on %s with a DependencyUnavailableError that is not contention, after every attempt', async (_, failure, contended) => {
    ddb.on(TransactWriteItemsCommand).rejects(failure);
    const reservations = limiter();
    const error = await reservations.reserve('acme', COUNTERS, 7, 'req-1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DependencyUnavailableError);
    expect(error).not.toBeInstanceOf(WindowContentionError);
    expect(error).toMatchObject({ dependency: 'dynamodb', message: 'rate-window transaction (reserve) failed after retries', cause: failure });
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteItemsCommand, 3);
    expect(reservations.contentionCount('acme')).toBe(contended);
  });

  it('at once on a cancellation no retry can change (a validation error on an item)', async () => {
    ddb.on(TransactWriteItemsCommand).rejects(cancelled('ValidationError', 'None', 'None', 'None', 'None'));
    const error = await limiter().reserve('acme', COUNTERS, 7, 'req-1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DependencyUnavailableError);
    expect(error).not.toBeInstanceOf(WindowContentionError);
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteItemsCommand, 1);
  });
});

describe('DynamoDbRateLimiter counts', () => {
  it('each transaction of an organization turned back by other writers or throttling, for that organization only', async () => {
    ddb
      .on(TransactWriteItemsCommand)
      .rejectsOnce(cancelled('TransactionConflict', 'None', 'None', 'None', 'None'))
      .rejectsOnce(cancelled('None', 'ThrottlingError', 'None', 'None', 'None'))
      .rejectsOnce(cancelled('ValidationError', 'None', 'None', 'None', 'None'))
      .resolves({});
    const reservations = new DynamoDbRateLimiter(new DynamoDBClient({ region: 'eu-west-1' }), TABLE, { maxAttempts: 5, baseDelayMs: 1, maxDelayMs: 1 }, async () => undefined);
    await expect(reservations.reserve('acme', COUNTERS, 7, 'req-1')).rejects.toBeInstanceOf(DependencyUnavailableError);
    expect(reservations.contentionCount('acme')).toBe(2);
    expect(reservations.contentionCount('other')).toBe(0);
  });
});

describe('DynamoDbRateLimiter settles without retrying', () => {
  it('a release of a request whose reservation marker is not there (never applied, or released already)', async () => {
    ddb.on(TransactWriteItemsCommand).rejects(cancelled('ConditionalCheckFailed', 'None', 'None', 'None', 'None'));
    await expect(limiter().release('acme', COUNTERS, 7, 'req-1')).resolves.toBeUndefined();
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteItemsCommand, 1);
  });

  it('a give-back already applied (its marker is there)', async () => {
    ddb.on(TransactWriteItemsCommand).rejects(cancelled('ConditionalCheckFailed', 'None', 'None', 'None', 'None'));
    await expect(limiter().giveBack('acme', COUNTERS, 7, 'req-1')).resolves.toBeUndefined();
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteItemsCommand, 1);
  });

  it('a give-back only when its marker is there: one turned back by a conflict is retried under the next token', async () => {
    ddb.on(TransactWriteItemsCommand).rejectsOnce(cancelled('TransactionConflict', 'None', 'None', 'None', 'None')).resolves({});
    await limiter().giveBack('acme', COUNTERS, 7, 'req-1');
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteItemsCommand, 2);
    expect(ddb).toHaveReceivedNthCommandWith(2, TransactWriteItemsCommand, { ClientRequestToken: token('req-1', 'give-back', 1) });
  });

  it('a full window whose count DynamoDB did not return: the refusal names it without a count', async () => {
    ddb.on(TransactWriteItemsCommand).rejects(cancelled('None', 'None', 'None', 'ConditionalCheckFailed', 'None'));
    await expect(limiter().reserve('acme', COUNTERS, 7, 'req-1')).resolves.toEqual({ allowed: false, overflowing: [{ ...COUNTERS[3], used: undefined }] });
  });

  it('nothing for a batch of nothing, or one with no window to count it in', async () => {
    const reservations = limiter();
    await expect(reservations.reserve('acme', COUNTERS, 0, 'req-1')).resolves.toEqual({ allowed: true });
    await expect(reservations.reserve('acme', [], 7, 'req-1')).resolves.toEqual({ allowed: true });
    await reservations.release('acme', COUNTERS, 0, 'req-1');
    await reservations.release('acme', [], 7, 'req-1');
    await reservations.giveBack('acme', COUNTERS, 0, 'req-1');
    await reservations.giveBack('acme', [], 7, 'req-1');
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteItemsCommand, 0);
  });
});

describe('LeasingRateLimiter sends', () => {
  it('for a hot organization, the probe, then a lease reserved like a request under the lease\'s id, and on drain the lease\'s unused part given back', async () => {
    ddb.on(TransactWriteItemsCommand).resolves({});
    // Leases are taken only where the smallest quota is at least minQuotaForLeases (10,000).
    const quotas: Quotas = { minute: 100_000, hour: 1_000_000, day: 10_000_000, month: 100_000_000 };
    const counters = countersFor(quotas, AT);
    // 10 traces in the 5 s observed make 2/s, hot at 1/s: the next lease covers 30 s of that, 60 traces.
    const leasing = new LeasingRateLimiter(limiter(), () => AT.getTime(), { hotAboveTracesPerSecond: 1 }, undefined, () => 0);
    await expect(leasing.reserve('acme', counters, 10, 'req-1')).resolves.toEqual({ allowed: true });
    await expect(leasing.reserve('acme', counters, 10, 'req-2')).resolves.toEqual({ allowed: true });
    await leasing.drain();

    expect(ddb).toHaveReceivedCommandTimes(TransactWriteItemsCommand, 3);
    expect(ddb).toHaveReceivedNthCommandWith(1, TransactWriteItemsCommand, { TransactItems: [...increments(10, quotas), putMarker('req-1', 10)], ClientRequestToken: token('req-1', 'probe-reserve') });
    const leaseMarker = ddb.commandCalls(TransactWriteItemsCommand)[1]?.args[0].input.TransactItems?.[4]?.Put?.Item?.sk?.S ?? '';
    expect(leaseMarker).toMatch(/^reservation#lease-[0-9a-f-]{36}$/);
    const leaseId = leaseMarker.replace('reservation#', '');
    expect(ddb).toHaveReceivedNthCommandWith(2, TransactWriteItemsCommand, { TransactItems: [...increments(60, quotas), putMarker(leaseId, 60)], ClientRequestToken: token(leaseId, 'reserve') });
    expect(ddb).toHaveReceivedNthCommandWith(3, TransactWriteItemsCommand, { TransactItems: [deleteMarker(leaseId), ...decrements(50)], ClientRequestToken: token(leaseId, 'release') });
  });
});
