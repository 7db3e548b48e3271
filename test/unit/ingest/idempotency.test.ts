import { withIdempotency } from '../../../lambda/ingest/core/idempotency/idempotency.js';
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
