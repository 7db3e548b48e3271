import { gunzipSync, gzipSync } from 'node:zlib';
import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { DynamoModel } from '../../../../../devkit/dynamo/model.js';
import { seededRandom, VirtualClock } from '../../../../../devkit/dynamo/virtual-clock.js';
import {
  DynamoDbIdempotencyStore,
  IDEMPOTENCY_LOCK_SECONDS,
  IDEMPOTENCY_RETENTION_SECONDS,
} from '../../../../../lambda/ingest/adapters/idempotency/dynamodb-idempotency-store.js';
import { DependencyUnavailableError } from '../../../../../lambda/shared/domain/errors.js';

/**
 * The idempotency store against the devkit's DynamoDB model, which evaluates the condition and update
 * expressions the store sends: a claim, a completion and a release are what the expressions let through,
 * not what a mock was told to answer.
 */

const TABLE = 'rate';
const NOW = 1_700_000_000;
const KEY = { pk: { S: 'IDEM#org' }, sk: { S: 'k' } };

function setup(options: { failWith?: (command: unknown) => Error | undefined; maxStoredResponseBytes?: number } = {}) {
  const clock = new VirtualClock(NOW * 1000);
  const model = new DynamoModel(clock, { random: seededRandom(30) });
  const sent: unknown[] = [];
  const client = {
    send: async (command: unknown) => {
      sent.push(command);
      const failure = options.failWith?.(command);
      if (failure) throw failure;
      return model.client().send(command as never);
    },
  } as unknown as DynamoDBClient;
  const store = new DynamoDbIdempotencyStore(client, TABLE, options.maxStoredResponseBytes);
  const settle = <T>(work: Promise<T>): Promise<T> => clock.runThrough(work);
  return {
    model,
    sent,
    settle,
    claim: (token: string, at = NOW, hash = 'hash-a', key = 'k', org = 'org') => settle(store.claim(org, key, hash, at, token)),
    complete: (token: string, response = '{"accepted":1}', at = NOW) => settle(store.complete('org', 'k', response, at, token)),
    release: (token: string) => settle(store.release('org', 'k', token)),
    item: () => model.get(TABLE, KEY),
  };
}

const conditionFailed = () => new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });

describe('DynamoDbIdempotencyStore.claim on the DynamoDB model', () => {
  it('claims a free key, writing the claim with its token, a lock for the function timeout and a 24-hour retention', async () => {
    const s = setup();
    await expect(s.claim('token-a')).resolves.toEqual({ kind: 'claimed' });
    expect(s.item()).toEqual({
      ...KEY,
      state: { S: 'in_progress' },
      body_hash: { S: 'hash-a' },
      claim_token: { S: 'token-a' },
      lock_expires_at: { N: String(NOW + 120) },
      expires_at: { N: String(NOW + 86_400) },
    });
    expect(IDEMPOTENCY_LOCK_SECONDS).toBe(120);
    expect(IDEMPOTENCY_RETENTION_SECONDS).toBe(86_400);
  });

  it('does not take a live claim of another request: it answers in_progress with the holder\'s body hash and leaves the claim as it was', async () => {
    const s = setup();
    await s.claim('token-a');
    const held = s.item();
    // Up to and including the second the lock ends, the holder may still be running.
    for (const at of [NOW, NOW + 1, NOW + IDEMPOTENCY_LOCK_SECONDS]) {
      await expect(s.claim('token-b', at, 'hash-b')).resolves.toEqual({ kind: 'in_progress', bodyHash: 'hash-a' });
    }
    expect(s.item()).toEqual(held);
  });

  it('takes a claim whose lock expired (its request died holding it), from the second after the lock ends', async () => {
    const s = setup();
    await s.claim('token-a');
    const at = NOW + IDEMPOTENCY_LOCK_SECONDS + 1;
    await expect(s.claim('token-b', at, 'hash-b')).resolves.toEqual({ kind: 'claimed' });
    expect(s.item()).toMatchObject({ claim_token: { S: 'token-b' }, body_hash: { S: 'hash-b' }, lock_expires_at: { N: String(at + 120) } });
  });

  it('claims again with its own token (the SDK retrying a PutItem whose answer was lost) while the lock is live', async () => {
    const s = setup();
    await s.claim('token-a');
    await expect(s.claim('token-a', NOW + 5)).resolves.toEqual({ kind: 'claimed' });
    expect(s.item()?.lock_expires_at).toEqual({ N: String(NOW + 5 + 120) });
  });

  it('answers a completed key with its stored response and hash, to another request and to the completed one\'s own token', async () => {
    const s = setup();
    await s.claim('token-a');
    await expect(s.complete('token-a', '{"accepted":3,"rejected":0,"errors":[]}')).resolves.toBe(true);
    const completed = { kind: 'completed', bodyHash: 'hash-a', response: '{"accepted":3,"rejected":0,"errors":[]}' };
    // Long after the lock time, and with the token that completed it: a completed record is never claimed over.
    for (const [token, at] of [['token-b', NOW + 1], ['token-b', NOW + IDEMPOTENCY_LOCK_SECONDS + 1], ['token-a', NOW + 3600]] as const) {
      await expect(s.claim(token, at, 'hash-b')).resolves.toEqual(completed);
    }
    expect(s.item()?.state).toEqual({ S: 'completed' });
  });

  it('takes a completed key again once its 24 hours have passed (TTL deletion may lag by days)', async () => {
    const s = setup();
    await s.claim('token-a');
    await s.complete('token-a');
    const retained = NOW + IDEMPOTENCY_RETENTION_SECONDS;
    await expect(s.claim('token-b', retained, 'hash-b')).resolves.toMatchObject({ kind: 'completed' });
    await expect(s.claim('token-b', retained + 1, 'hash-b')).resolves.toEqual({ kind: 'claimed' });
    expect(s.item()).toMatchObject({ state: { S: 'in_progress' }, claim_token: { S: 'token-b' }, body_hash: { S: 'hash-b' } });
    expect(s.item()?.response).toBeUndefined();
  });

  it('keeps keys of different organizations apart', async () => {
    const s = setup();
    await s.claim('token-a');
    await expect(s.claim('token-b', NOW, 'hash-b', 'k', 'other-org')).resolves.toEqual({ kind: 'claimed' });
    expect(s.model.get(TABLE, { pk: { S: 'IDEM#other-org' }, sk: { S: 'k' } })?.claim_token).toEqual({ S: 'token-b' });
  });

  it('reads the holder with a strongly consistent GetItem after a failed claim', async () => {
    const s = setup();
    await s.claim('token-a');
    await s.claim('token-b', NOW, 'hash-b');
    const reads = s.sent.filter((c): c is GetItemCommand => c instanceof GetItemCommand);
    expect(reads.map((c) => c.input)).toEqual([{ TableName: TABLE, Key: KEY, ConsistentRead: true }]);
  });

  it('reports a record found past its retention after a failed claim as vanished: it expired in between', async () => {
    // The PutItem fails (another request held the key), then the read finds the record expired.
    const s = setup({ failWith: (command) => (command instanceof PutItemCommand && s.item() ? conditionFailed() : undefined) });
    await s.settle(s.model.client().send(new PutItemCommand({ TableName: TABLE, Item: { ...KEY, state: { S: 'in_progress' }, body_hash: { S: 'h' }, expires_at: { N: String(NOW - 1) } } })));
    await expect(s.claim('token-b')).resolves.toEqual({ kind: 'vanished' });
    // Not yet past it at the second it expires.
    await expect(s.claim('token-b', NOW - 1)).resolves.toEqual({ kind: 'in_progress', bodyHash: 'h' });
  });

  it('wraps a failed claim that is not a condition failure as dependency unavailable, keeping the cause', async () => {
    const cause = Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' });
    const s = setup({ failWith: (command) => (command instanceof PutItemCommand ? cause : undefined) });
    const error = await s.claim('token-a').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DependencyUnavailableError);
    expect(error).toMatchObject({ dependency: 'dynamodb', message: 'idempotency claim failed', cause });
  });

  it('wraps a failed read after a failed claim as dependency unavailable, keeping the cause', async () => {
    const cause = new Error('socket hang up');
    const s = setup({ failWith: (command) => (command instanceof PutItemCommand ? conditionFailed() : command instanceof GetItemCommand ? cause : undefined) });
    const error = await s.claim('token-a').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DependencyUnavailableError);
    expect(error).toMatchObject({ dependency: 'dynamodb', message: 'idempotency read failed', cause });
  });
});

describe('DynamoDbIdempotencyStore.complete on the DynamoDB model', () => {
  it('stores the holder\'s response gzipped, marks the key completed for 24 hours from now and drops the lock', async () => {
    const s = setup();
    await s.claim('token-a');
    await expect(s.complete('token-a', '{"accepted":2}', NOW + 30)).resolves.toBe(true);
    const item = s.item();
    expect(item).toMatchObject({ state: { S: 'completed' }, claim_token: { S: 'token-a' }, body_hash: { S: 'hash-a' }, expires_at: { N: String(NOW + 30 + 86_400) } });
    expect(item?.lock_expires_at).toBeUndefined();
    expect(gunzipSync(item?.response?.B as Uint8Array).toString('utf8')).toBe('{"accepted":2}');
  });

  it('does not complete a claim another request has taken since (its lock had expired): answers false and leaves it', async () => {
    const s = setup();
    await s.claim('token-a');
    await s.claim('token-b', NOW + IDEMPOTENCY_LOCK_SECONDS + 1, 'hash-b');
    const taken = s.item();
    await expect(s.complete('token-a')).resolves.toBe(false);
    expect(s.item()).toEqual(taken);
  });

  it('does not write a response to a key with no claim', async () => {
    const s = setup();
    await expect(s.complete('token-a')).resolves.toBe(false);
    expect(s.item()).toBeUndefined();
  });

  it('answers false without writing when the gzipped response would not fit the item (over 350,000 bytes)', async () => {
    const s = setup();
    await s.claim('token-a');
    // Base64 of random bytes barely compresses: 600,000 characters stay well over 350,000 bytes gzipped.
    const random = seededRandom(7);
    const bytes = Buffer.alloc(450_000);
    for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256);
    const incompressible = bytes.toString('base64');
    await expect(s.complete('token-a', incompressible)).resolves.toBe(false);
    expect(s.sent.some((c) => c instanceof UpdateItemCommand)).toBe(false);
    expect(s.item()?.state).toEqual({ S: 'in_progress' });
  });

  it('stores a response whose gzip is exactly the bound, and not one whose gzip is a byte over it', async () => {
    const response = '{"accepted":3,"rejected":0,"errors":[]}';
    const size = gzipSync(response).byteLength;
    const atBound = setup({ maxStoredResponseBytes: size });
    await atBound.claim('token-a');
    await expect(atBound.complete('token-a', response)).resolves.toBe(true);
    expect(atBound.item()?.state).toEqual({ S: 'completed' });
    const under = setup({ maxStoredResponseBytes: size - 1 });
    await under.claim('token-a');
    await expect(under.complete('token-a', response)).resolves.toBe(false);
    expect(under.item()?.state).toEqual({ S: 'in_progress' });
  });

  it('rethrows a failure that is not a condition failure', async () => {
    const cause = new Error('socket hang up');
    const s = setup({ failWith: (command) => (command instanceof UpdateItemCommand ? cause : undefined) });
    await expect(s.complete('token-a')).rejects.toBe(cause);
  });
});

describe('DynamoDbIdempotencyStore.release on the DynamoDB model', () => {
  it('frees the holder\'s own claim, so the next request claims the key', async () => {
    const s = setup();
    await s.claim('token-a');
    await s.release('token-a');
    expect(s.item()).toBeUndefined();
    await expect(s.claim('token-b', NOW, 'hash-b')).resolves.toEqual({ kind: 'claimed' });
  });

  it('leaves a claim another request has taken since, without an error', async () => {
    const s = setup();
    await s.claim('token-a');
    await s.claim('token-b', NOW + IDEMPOTENCY_LOCK_SECONDS + 1, 'hash-b');
    const taken = s.item();
    await expect(s.release('token-a')).resolves.toBeUndefined();
    expect(s.item()).toEqual(taken);
  });

  it('never deletes a completed key, even with the token that completed it', async () => {
    const s = setup();
    await s.claim('token-a');
    await s.complete('token-a');
    const completed = s.item();
    await expect(s.release('token-a')).resolves.toBeUndefined();
    expect(s.item()).toEqual(completed);
  });

  it('rethrows a failure that is not a condition failure', async () => {
    const cause = new Error('socket hang up');
    const s = setup({ failWith: (command) => (command instanceof DeleteItemCommand ? cause : undefined) });
    await expect(s.release('token-a')).rejects.toBe(cause);
  });
});
