import { refusedFor } from '../core/errors.js';
import { readIdempotencyKey } from '../core/idempotency/idempotency.js';
import { ingestCandidates } from '../core/ingest-candidates.js';
import type { Arrival, IngestResult } from '../core/ingest-types.js';
import type { IngestDeps } from '../core/ports.js';
import { identifyCaller } from '../core/tenancy/identify-caller.js';
import { decodeBody, type RawBody } from '../http/decode-body.js';
import { draftBatch } from './parse-batch.js';

/** One request to POST /v1/traces/ingest, as the HTTP layer hands it over. */
export interface IngestRequest extends Arrival {
  /** Every value of every `X-API-Key` header sent; exactly one distinct value is valid. */
  apiKeyValues: readonly string[];
  body: RawBody;
  /** Every value of every `Idempotency-Key` header sent. */
  idempotencyKeyValues?: readonly string[];
}

/**
 * The JSON route, in the order of checks of docs/contract.md §1: identify the caller (checks 1 to 3),
 * decode the body into drafts (4 and 5), then the ingest core. A client's trace is its own draft,
 * and one invalid span rejects it (docs/contract.md §3).
 */
export async function ingestBatch(deps: IngestDeps, request: IngestRequest): Promise<IngestResult> {
  const caller = await identifyCaller(deps, request.apiKeyValues);
  return refusedFor(caller.org.orgId, async () => {
    const idempotencyKey = deps.idempotency ? readIdempotencyKey(request.idempotencyKeyValues) : undefined;
    const body = decodeBody(request.body);
    const drafts = draftBatch(body, request.body.isBase64Encoded);
    return ingestCandidates(deps, caller, request, drafts, idempotencyKey === undefined ? undefined : { key: idempotencyKey, body });
  });
}
