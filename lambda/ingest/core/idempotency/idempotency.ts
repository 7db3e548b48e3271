import { createHash, randomUUID } from 'node:crypto';
import {
  dependencyUnavailable,
  IdempotencyInProgressError,
  IdempotencyKeyReusedError,
  InvalidIdempotencyKeyError,
} from '../errors.js';
import type { IngestResult } from '../ingest-types.js';
import type { IdempotencyClaim, IdempotencyStore } from './ports.js';
import type { IngestLogger } from '../ports.js';
import { singleHeaderValue } from '../tenancy/identify-caller.js';

/** Printable ASCII without spaces, 1 to 255 characters: a UUID, a ULID or any client token fits. */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** Claims tried when the key keeps vanishing between a failed claim and the read that follows it. */
export const MAX_CLAIM_ATTEMPTS = 3;

/** The request's Idempotency-Key, or undefined when it sent none. */
export function readIdempotencyKey(values: readonly string[] | undefined): string | undefined {
  const header = singleHeaderValue(values ?? []);
  if (header.kind === 'absent') return undefined;
  if (header.kind === 'one' && IDEMPOTENCY_KEY_PATTERN.test(header.value)) return header.value;
  throw new InvalidIdempotencyKeyError('Invalid Idempotency-Key: send one header of 1 to 255 printable ASCII characters without spaces');
}

/**
 * The identity of a request sent under an Idempotency-Key, the same for every resend of that body
 * with that key, so the records of a resend after an unknown outcome are copies of the first ones.
 */
export function idempotentRequestIdentity(orgId: string, idempotencyKey: string, body: string): string {
  return `idem-${createHash('sha256').update(`${orgId}\n${idempotencyKey}\n`).update(body, 'utf8').digest('base64url')}`;
}

export interface IdempotentRequest {
  store: IdempotencyStore;
  logger: IngestLogger;
  orgId: string;
  apiKeyId: string;
  idempotencyKey: string;
  /** The decoded body: a repeat must send the same. */
  body: string;
  receivedAtMicros: number;
}

/**
 * Safe retries: the first request with a key claims it; a repeat with the same body gets the first
 * 200 again without counting or publishing; a different body gets 422; a repeat while the first
 * is still running gets 409. Only a 200 is remembered: any refusal frees the key for a retry.
 */
export async function withIdempotency(request: IdempotentRequest, run: () => Promise<IngestResult>): Promise<IngestResult> {
  const { store, logger, orgId, apiKeyId, idempotencyKey } = request;
  const bodyHash = createHash('sha256').update(request.body, 'utf8').digest('base64url');
  const nowSeconds = Math.floor(request.receivedAtMicros / 1_000_000);
  const claimToken = randomUUID();
  const release = () =>
    store.release(orgId, idempotencyKey, claimToken).catch((releaseError: unknown) => {
      logger.error('Could not release an idempotency claim', { orgId, error: (releaseError as Error).name });
    });
  let claim: IdempotencyClaim | undefined;
  // A key released between our failed claim and our read is free: claim it again, a bounded number of times.
  for (let attempt = 0; attempt < MAX_CLAIM_ATTEMPTS && (claim === undefined || claim.kind === 'vanished'); attempt++) {
    try {
      claim = await store.claim(orgId, idempotencyKey, bodyHash, nowSeconds, claimToken);
    } catch (error) {
      // The claim may have been written with its answer lost: give it up, or the resend meets it for the lock time.
      await release();
      throw dependencyUnavailable(error);
    }
  }
  if (claim === undefined || claim.kind === 'vanished') {
    // Other requests keep taking and releasing the key: nothing was read to compare, so never 422.
    throw new IdempotencyInProgressError('A request with this Idempotency-Key is being processed concurrently; retry after the Retry-After interval');
  }
  if (claim.kind !== 'claimed') {
    if (claim.bodyHash !== bodyHash) {
      throw new IdempotencyKeyReusedError(
        'Idempotency-Key reused with a different body: a key identifies one request; use a new key for a new batch',
      );
    }
    if (claim.kind === 'in_progress') {
      throw new IdempotencyInProgressError('A request with this Idempotency-Key is still in progress; retry after the Retry-After interval');
    }
    const stored = JSON.parse(claim.response) as Pick<IngestResult, 'accepted' | 'rejected' | 'errors'>;
    return { accepted: stored.accepted, rejected: stored.rejected, errors: stored.errors, orgId, apiKeyId, replayed: true };
  }
  let result: IngestResult;
  try {
    result = await run();
  } catch (error) {
    await release();
    throw error;
  }
  const response = JSON.stringify({ accepted: result.accepted, rejected: result.rejected, errors: result.errors });
  const stored = await store.complete(orgId, idempotencyKey, response, nowSeconds, claimToken).catch((error: unknown) => {
    logger.error('Could not store an idempotent response', { orgId, error: (error as Error).name });
    return false;
  });
  // The batch is accepted either way; an unstored response only means a later repeat is not recognised.
  if (!stored) logger.warn('Idempotent response not stored; a repeat within the lock time gets 409', { orgId });
  return result;
}
