import { createHash } from 'node:crypto';

/**
 * A source of UUIDs that a resend repeats: the n-th id asked for under `seed` is the same every
 * time. Used for the ids the server generates when a request has an Idempotency-Key, so a batch
 * resent after a "may have been accepted" 503 yields the same trace and span ids, and its copies
 * collapse instead of landing as new traces. Name-based (version 8, RFC 9562) so they never collide
 * with the random version-4 ids generated otherwise.
 */
export function derivedIds(seed: string): () => string {
  let n = 0;
  return () => {
    const hex = createHash('sha256').update(`${seed}#${n++}`).digest('hex');
    const variant = ((parseInt(hex[16] as string, 16) & 0x3) | 0x8).toString(16);
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
  };
}
