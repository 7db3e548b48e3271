import { createHash } from 'node:crypto';
import { ConditionalCheckFailedException, type DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { DynamoModel } from '../../../devkit/dynamo/model.js';
import { seededRandom, VirtualClock } from '../../../devkit/dynamo/virtual-clock.js';
import { DynamoDbIdempotencyStore } from '../../../lambda/ingest/adapters/idempotency/dynamodb-idempotency-store.js';
import { MAX_CLAIM_ATTEMPTS, withIdempotency } from '../../../lambda/ingest/core/idempotency/idempotency.js';
import type { IdempotencyStore } from '../../../lambda/ingest/core/idempotency/ports.js';

const logger = { warn: () => undefined, error: () => undefined };
const request = (store: IdempotencyStore) => ({ store, logger, orgId: 'org', apiKeyId: 'key', idempotencyKey: 'k', body: '{}', receivedAtMicros: 1_700_000_000_000_000 });
const result = { accepted: 1, rejected: 0, errors: [], orgId: 'org', apiKeyId: 'key' };

describe('withIdempotency: the claim token', () => {
  it('gives back a claim whose every attempt failed, with the token it was claimed with, before answering 503', async () => {
    const calls: string[] = [];
    const store: IdempotencyStore = {
      claim: async (_org, _key, _hash, _now, token) => (calls.push(`claim ${token}`), Promise.reject(Object.assign(new Error('timed out'), { name: 'TimeoutError' }))),
      complete: async () => true,
      release: async (_org, _key, token) => void calls.push(`release ${token}`),
    };
    const run = jest.fn(async () => result);

    await expect(withIdempotency(request(store), run)).rejects.toMatchObject({ status: 503 });

    expect(run).not.toHaveBeenCalled();
    const [claimed, released] = calls;
    expect(calls).toHaveLength(2);
    expect(released?.replace('release ', '')).toBe(claimed?.replace('claim ', ''));
  });

  it('completes with the token it claimed with, one fresh token per request', async () => {
    const tokens: string[] = [];
    const store: IdempotencyStore = {
      claim: async (_org, _key, _hash, _now, token) => (tokens.push(token), { kind: 'claimed' }),
      complete: async (_org, _key, _response, _now, token) => (tokens.push(token), true),
      release: async () => undefined,
    };
    await withIdempotency(request(store), async () => result);
    await withIdempotency(request(store), async () => result);
    expect(tokens[0]).toBe(tokens[1]);
    expect(tokens[2]).toBe(tokens[3]);
    expect(tokens[0]).not.toBe(tokens[2]);
  });
});

describe('withIdempotency: a claim released between a failed claim and its read', () => {
  const ORG = 'org';
  const TABLE = 'rate';
  const NOW_SECONDS = 1_700_000_000;

  /**
   * DynamoDB (the devkit model) with a hook run just before the next GetItem reaches it: the place where
   * request A's release lands between request B's failed PutItem and B's read.
   */
  function modelWithHookBeforeRead() {
    const clock = new VirtualClock(NOW_SECONDS * 1000);
    const model = new DynamoModel(clock, { random: seededRandom(27) });
    const hooks: (() => Promise<void>)[] = [];
    const client = {
      send: async (command: unknown) => {
        if (command instanceof GetItemCommand) await hooks.shift()?.();
        return model.client().send(command as never);
      },
    } as unknown as DynamoDBClient;
    return { clock, model, hooks, store: new DynamoDbIdempotencyStore(client, TABLE) };
  }

  /** Runs `work` to its end while the model's virtual clock advances. */
  async function onClock<T>(clock: VirtualClock, work: Promise<T>): Promise<T> {
    const settled = work.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    await clock.run();
    const outcome = await settled;
    if ('error' in outcome) throw outcome.error;
    return outcome.value;
  }

  it('claims again and answers the same-body resend 200 instead of 422 when the holder released the key before the read', async () => {
    const { clock, model, hooks, store } = modelWithHookBeforeRead();
    const body = '{"traces":[1]}';
    const hash = createHash('sha256').update(body, 'utf8').digest('base64url');
    // A holds the key: B's PutItem fails on it.
    expect(await onClock(clock, store.claim(ORG, 'k', hash, NOW_SECONDS, 'token-a'))).toEqual({ kind: 'claimed' });
    // A ends with a 503 and gives the claim up after B's claim failed and before B reads the item.
    hooks.push(() => store.release(ORG, 'k', 'token-a'));
    const run = jest.fn(async () => result);

    const answer = await onClock(clock, withIdempotency({ ...request(store), body, receivedAtMicros: NOW_SECONDS * 1_000_000 }, run));

    expect(answer).toMatchObject({ accepted: 1, rejected: 0 });
    expect(run).toHaveBeenCalledTimes(1);
    const [item] = model.items(TABLE);
    expect(item?.state?.S).toBe('completed');
    expect(item?.body_hash?.S).toBe(hash);
    // complete's `REMOVE lock_expires_at`, evaluated by the model.
    expect(item?.lock_expires_at).toBeUndefined();
  });

  it('answers 409 with Retry-After, never 422, when the key vanishes on every one of its bounded claims', async () => {
    const claims: string[] = [];
    const store: IdempotencyStore = {
      claim: async (_org, _key, _hash, _now, token) => (claims.push(token), { kind: 'vanished' }),
      complete: async () => true,
      release: async () => undefined,
    };
    const run = jest.fn(async () => result);

    await expect(withIdempotency(request(store), run)).rejects.toMatchObject({ status: 409, code: 'idempotency_in_progress', retryAfterSeconds: 1 });

    expect(claims).toHaveLength(MAX_CLAIM_ATTEMPTS);
    expect(run).not.toHaveBeenCalled();
  });
});

describe('DynamoDbIdempotencyStore.claim', () => {
  it('reports a key it could not claim and then found absent as vanished, with no hash to compare', async () => {
    const clock = new VirtualClock(1_700_000_000_000);
    const model = new DynamoModel(clock, { random: seededRandom(1) });
    let reads = 0;
    const client = {
      send: async (command: unknown) => {
        if (command instanceof PutItemCommand) throw new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });
        if (command instanceof GetItemCommand) reads++;
        return model.client().send(command as never);
      },
    } as unknown as DynamoDBClient;
    const claim = new DynamoDbIdempotencyStore(client, 'rate').claim('org', 'k', 'hash', 1_700_000_000, 'token');
    await clock.run();
    expect(await claim).toEqual({ kind: 'vanished' });
    expect(reads).toBe(1);
  });
});
