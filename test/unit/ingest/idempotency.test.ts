import { createHash } from 'node:crypto';
import { ConditionalCheckFailedException, type DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { DynamoModel } from '../../../devkit/dynamo/model.js';
import { seededRandom, VirtualClock } from '../../../devkit/dynamo/virtual-clock.js';
import { DynamoDbIdempotencyStore } from '../../../lambda/ingest/adapters/idempotency/dynamodb-idempotency-store.js';
import { idempotentRequestIdentity, type IdempotentRequest, MAX_CLAIM_ATTEMPTS, readIdempotencyKey, withIdempotency } from '../../../lambda/ingest/core/idempotency/idempotency.js';
import type { IdempotencyClaim, IdempotencyStore } from '../../../lambda/ingest/core/idempotency/ports.js';

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

  it('claims again and answers the same-body resend 200 instead of 422 when the holder released the key before the read', async () => {
    const { clock, model, hooks, store } = modelWithHookBeforeRead();
    const body = '{"traces":[1]}';
    const hash = createHash('sha256').update(body, 'utf8').digest('base64url');
    // A holds the key: B's PutItem fails on it.
    expect(await clock.runThrough(store.claim(ORG, 'k', hash, NOW_SECONDS, 'token-a'))).toEqual({ kind: 'claimed' });
    // A ends with a 503 and gives the claim up after B's claim failed and before B reads the item.
    hooks.push(() => store.release(ORG, 'k', 'token-a'));
    const run = jest.fn(async () => result);

    const answer = await clock.runThrough(withIdempotency({ ...request(store), body, receivedAtMicros: NOW_SECONDS * 1_000_000 }, run));

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

    await expect(withIdempotency(request(store), run)).rejects.toMatchObject({
      status: 409,
      code: 'idempotency_in_progress',
      retryAfterSeconds: 1,
      message: 'A request with this Idempotency-Key is being processed concurrently; retry after the Retry-After interval',
    });

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

/** A store answering every claim with `claim`, recording each call; `fail` makes a method reject. */
function scriptedStore(claim: IdempotencyClaim, fail: { complete?: Error; release?: Error; completeAnswer?: boolean } = {}) {
  const calls: unknown[][] = [];
  const store: IdempotencyStore = {
    claim: async (...args) => (calls.push(['claim', ...args]), claim),
    complete: async (...args) => {
      calls.push(['complete', ...args]);
      if (fail.complete) throw fail.complete;
      return fail.completeAnswer ?? true;
    },
    release: async (...args) => {
      calls.push(['release', ...args]);
      if (fail.release) throw fail.release;
    },
  };
  return { store, calls };
}

function recordingLogger() {
  const lines: { level: string; message: string; fields: unknown }[] = [];
  const log = (level: string) => (message: string, fields: unknown) => void lines.push({ level, message, fields });
  return { logger: { warn: log('warn'), error: log('error') }, lines };
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('base64url');

describe('withIdempotency: what a claim found', () => {
  const body = '{"traces":["é"]}';
  const at = (store: IdempotencyStore, logger: IdempotentRequest['logger'] = request(store).logger) => ({ ...request(store), logger, body, receivedAtMicros: 1_700_000_123_999_999 });

  it('claims with the body\'s SHA-256 and the arrival second, runs the batch once and stores its answer under the same key and token', async () => {
    const { store, calls } = scriptedStore({ kind: 'claimed' });
    const run = jest.fn(async () => ({ ...result, accepted: 2, rejected: 1, errors: [{ index: 1, code: 'invalid' }] as never[] }));
    await expect(withIdempotency(at(store), run)).resolves.toEqual({ ...result, accepted: 2, rejected: 1, errors: [{ index: 1, code: 'invalid' }] });
    expect(run).toHaveBeenCalledTimes(1);
    const [claim, complete] = calls;
    expect(calls).toHaveLength(2);
    expect(claim).toEqual(['claim', 'org', 'k', sha256(body), 1_700_000_123, expect.any(String)]);
    expect(complete).toEqual(['complete', 'org', 'k', '{"accepted":2,"rejected":1,"errors":[{"index":1,"code":"invalid"}]}', 1_700_000_123, claim?.[5]]);
  });

  it('answers a completed request with the same body from its stored answer, marked replayed, without running it', async () => {
    const stored = '{"accepted":4,"rejected":1,"errors":[{"index":3}]}';
    const { store, calls } = scriptedStore({ kind: 'completed', bodyHash: sha256(body), response: stored });
    const run = jest.fn(async () => result);
    await expect(withIdempotency(at(store), run)).resolves.toEqual({ accepted: 4, rejected: 1, errors: [{ index: 3 }], orgId: 'org', apiKeyId: 'key', replayed: true });
    expect(run).not.toHaveBeenCalled();
    expect(calls.map(([method]) => method)).toEqual(['claim']);
  });

  it.each([
    ['completed', { kind: 'completed', bodyHash: sha256('{"other":1}'), response: '{}' }],
    ['in progress', { kind: 'in_progress', bodyHash: sha256('{"other":1}') }],
  ] as const)('refuses 422 a key %s under a different body, without running or releasing it', async (_, claim) => {
    const { store, calls } = scriptedStore(claim);
    const run = jest.fn(async () => result);
    await expect(withIdempotency(at(store), run)).rejects.toMatchObject({
      status: 422,
      code: 'idempotency_key_reused',
      message: 'Idempotency-Key reused with a different body: a key identifies one request; use a new key for a new batch',
    });
    expect(run).not.toHaveBeenCalled();
    expect(calls.map(([method]) => method)).toEqual(['claim']);
  });

  it('refuses 409 with Retry-After a same-body request while the first is in progress, without releasing its claim', async () => {
    const { store, calls } = scriptedStore({ kind: 'in_progress', bodyHash: sha256(body) });
    const run = jest.fn(async () => result);
    await expect(withIdempotency(at(store), run)).rejects.toMatchObject({
      status: 409,
      code: 'idempotency_in_progress',
      retryAfterSeconds: 1,
      message: 'A request with this Idempotency-Key is still in progress; retry after the Retry-After interval',
    });
    expect(run).not.toHaveBeenCalled();
    expect(calls.map(([method]) => method)).toEqual(['claim']);
  });

  it('gives the claim back when the batch fails, so a retry is processed afresh, and rethrows the failure', async () => {
    const { store, calls } = scriptedStore({ kind: 'claimed' });
    const failure = new Error('publish failed');
    await expect(withIdempotency(at(store), async () => Promise.reject(failure))).rejects.toBe(failure);
    expect(calls.map(([method]) => method)).toEqual(['claim', 'release']);
    expect(calls[1]).toEqual(['release', 'org', 'k', calls[0]?.[5]]);
  });

  it('still rethrows the batch\'s failure when giving the claim back fails, and logs that it could not', async () => {
    const { store } = scriptedStore({ kind: 'claimed' }, { release: Object.assign(new Error('timeout'), { name: 'TimeoutError' }) });
    const { logger, lines } = recordingLogger();
    const failure = new Error('publish failed');
    await expect(withIdempotency(at(store, logger), async () => Promise.reject(failure))).rejects.toBe(failure);
    expect(lines).toEqual([{ level: 'error', message: 'Could not release an idempotency claim', fields: { orgId: 'org', error: 'TimeoutError' } }]);
  });

  it('answers the accepted batch even when its answer cannot be stored, and warns that a repeat gets 409', async () => {
    const { store } = scriptedStore({ kind: 'claimed' }, { completeAnswer: false });
    const { logger, lines } = recordingLogger();
    await expect(withIdempotency(at(store, logger), async () => result)).resolves.toEqual(result);
    expect(lines).toEqual([{ level: 'warn', message: 'Idempotent response not stored; a repeat within the lock time gets 409', fields: { orgId: 'org' } }]);
  });

  it('answers the accepted batch when storing its answer throws, logging the error and the warning', async () => {
    const { store } = scriptedStore({ kind: 'claimed' }, { complete: Object.assign(new Error('throttled'), { name: 'ThrottlingException' }) });
    const { logger, lines } = recordingLogger();
    await expect(withIdempotency(at(store, logger), async () => result)).resolves.toEqual(result);
    expect(lines).toEqual([
      { level: 'error', message: 'Could not store an idempotent response', fields: { orgId: 'org', error: 'ThrottlingException' } },
      { level: 'warn', message: 'Idempotent response not stored; a repeat within the lock time gets 409', fields: { orgId: 'org' } },
    ]);
  });

  it('logs nothing when the answer is stored', async () => {
    const { store } = scriptedStore({ kind: 'claimed' });
    const { logger, lines } = recordingLogger();
    await withIdempotency(at(store, logger), async () => result);
    expect(lines).toEqual([]);
  });

  it('claims once more after a vanished key and runs the batch once it is claimed', async () => {
    const answers: IdempotencyClaim[] = [{ kind: 'vanished' }, { kind: 'claimed' }];
    const claims: string[] = [];
    const store: IdempotencyStore = {
      claim: async (_org, _key, _hash, _now, token) => (claims.push(token), answers.shift() ?? { kind: 'claimed' }),
      complete: async () => true,
      release: async () => undefined,
    };
    const run = jest.fn(async () => result);
    await expect(withIdempotency(at(store), run)).resolves.toEqual(result);
    expect(claims).toHaveLength(2);
    expect(claims[0]).toBe(claims[1]);
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('logs a release that fails after a claim that failed, and still answers 503', async () => {
    const store: IdempotencyStore = {
      claim: async () => Promise.reject(new Error('socket hang up')),
      complete: async () => true,
      release: async () => Promise.reject(Object.assign(new Error('socket hang up'), { name: 'NetworkingError' })),
    };
    const { logger, lines } = recordingLogger();
    await expect(withIdempotency(at(store, logger), async () => result)).rejects.toMatchObject({ status: 503 });
    expect(lines).toEqual([{ level: 'error', message: 'Could not release an idempotency claim', fields: { orgId: 'org', error: 'NetworkingError' } }]);
  });
});

describe('readIdempotencyKey', () => {
  it('answers undefined when the request sent no key', () => {
    expect(readIdempotencyKey(undefined)).toBeUndefined();
    expect(readIdempotencyKey([])).toBeUndefined();
  });

  it.each([
    ['one character', 'a'],
    ['a UUID', '0190d3c2-7f7a-7c3e-9d5a-4f1c2b3a4d5e'],
    ['the ends of printable ASCII', '!~'],
    ['255 characters', 'x'.repeat(255)],
  ])('takes %s', (_, key) => {
    expect(readIdempotencyKey([key])).toBe(key);
  });

  it('takes one key sent twice, and trims it', () => {
    expect(readIdempotencyKey([' k-1 ', 'k-1'])).toBe('k-1');
  });

  it.each([
    ['256 characters', ['x'.repeat(256)]],
    ['a space', ['two words']],
    ['a tab', ['tab\there']],
    ['a character outside ASCII', ['é']],
    ['DEL', ['\u007f']],
    ['two different keys', ['a', 'b']],
  ])('refuses 400 a key with %s', (_, values) => {
    let error: unknown;
    try {
      readIdempotencyKey(values);
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({
      status: 400,
      code: 'invalid_idempotency_key',
      message: 'Invalid Idempotency-Key: send one header of 1 to 255 printable ASCII characters without spaces',
    });
  });
});

describe('idempotentRequestIdentity', () => {
  it('is the base64url SHA-256 of organization, key and body, the same for every resend', () => {
    const expected = `idem-${createHash('sha256').update('org\nk\n{"traces":[]}').digest('base64url')}`;
    expect(idempotentRequestIdentity('org', 'k', '{"traces":[]}')).toBe(expected);
    expect(idempotentRequestIdentity('org', 'k', '{"traces":[1]}')).not.toBe(expected);
    expect(idempotentRequestIdentity('org2', 'k', '{"traces":[]}')).not.toBe(expected);
  });
});
