/** What a claim on an idempotency key found. */
export type IdempotencyClaim =
  | { kind: 'claimed' }
  | { kind: 'completed'; bodyHash: string; response: string }
  | { kind: 'in_progress'; bodyHash: string }
  /** The claim failed, yet the item was gone when read: its holder released it (or it expired) in between. Claim again. */
  | { kind: 'vanished' };

/**
 * Idempotency records. `claimToken` is unique to one request: a claim that holds it is that request's own,
 * so the SDK's retry of a claim whose answer was lost finds its own write instead of "in progress", and a
 * late `complete` or `release` never touches a claim another request took since.
 */
export interface IdempotencyStore {
  /** Claims the key for this request, or reports the request that holds it. */
  claim(orgId: string, key: string, bodyHash: string, nowSeconds: number, claimToken: string): Promise<IdempotencyClaim>;
  /** Stores the response of the request that holds the claim. Returns false when it could not be stored. */
  complete(orgId: string, key: string, response: string, nowSeconds: number, claimToken: string): Promise<boolean>;
  /** Gives this request's claim up, so a retry is processed afresh. */
  release(orgId: string, key: string, claimToken: string): Promise<void>;
}
