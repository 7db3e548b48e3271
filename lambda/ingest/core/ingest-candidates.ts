import { derivedIds } from '../../shared/domain/derived-ids.js';
import { PublishIncompleteError } from '../../shared/domain/errors.js';
import type { TraceDraft } from './draft.js';
import { IngestError, publishUnavailable, RateLimitedError } from './errors.js';
import { idempotentRequestIdentity, withIdempotency } from './idempotency/idempotency.js';
import type { Arrival, Caller, IngestResult } from './ingest-types.js';
import type { IngestDeps } from './ports.js';
import { encodeTrace, type EncodedTrace, publishTraces } from './publish/publish-traces.js';
import { readQuotaState } from './rate/read-quota-state.js';
import { reserveRateWindows } from './rate/reserve-rate-windows.js';
import { checkWorkspaceScope } from './tenancy/check-workspace-scope.js';
import { formatMicros } from './validation/timestamps.js';
import { CandidateValidation, type IdSource } from './validation/validate-candidates.js';

/** A request sent under an Idempotency-Key: the key, and the decoded body a resend must repeat. */
export interface IdempotentBody {
  key: string;
  body: string;
}

/**
 * The ingest core, checks 6 to 10 of docs/contract.md §1 on the candidates a route decoded, whatever
 * its wire format: workspace scope, then (under the request's Idempotency-Key, when it sent one)
 * per-trace validation, the rate windows and publishing. The caller is already identified (checks 1 to 3)
 * and the body decoded (4 and 5). Throws an `IngestError` for every refusal.
 */
export async function ingestCandidates(
  deps: IngestDeps,
  caller: Caller,
  arrival: Arrival,
  candidates: readonly TraceDraft[],
  idempotent?: IdempotentBody,
): Promise<IngestResult> {
  // Before the key is looked at: a replay answers only a caller who may send this batch at all.
  await checkWorkspaceScope(deps.tenancy, caller.key, candidates);
  if (!deps.idempotency || idempotent === undefined) return admitCandidates(deps, caller, arrival, candidates);
  const { orgId } = caller.org;
  const identified = { ...arrival, requestIdentity: idempotentRequestIdentity(orgId, idempotent.key, idempotent.body) };
  const result = await withIdempotency(
    { store: deps.idempotency, logger: deps.logger, orgId, apiKeyId: caller.key.keyId, idempotencyKey: idempotent.key, body: idempotent.body, receivedAtMicros: arrival.receivedAtMicros },
    () => admitCandidates(deps, caller, identified, candidates),
  );
  // A replayed answer reports the windows as they are now, not as they were when it was stored.
  return result.quotaState ? result : { ...result, quotaState: await readQuotaState(deps, caller, arrival) };
}

/** Checks 8 to 10 on candidates whose workspace scope was checked: validation, rate windows, publish. */
async function admitCandidates(deps: IngestDeps, caller: Caller, arrival: Arrival, candidates: readonly TraceDraft[]): Promise<IngestResult> {
  const { key, org } = caller;
  const requestContext = { org_id: org.orgId, api_key_id: key.keyId, request_id: arrival.requestId, received_at: formatMicros(arrival.receivedAtMicros) };
  const requestIdentity = arrival.requestIdentity ?? arrival.requestId;
  // A resend under the same Idempotency-Key must generate the same ids, or its copies land as new traces.
  const stableIdentity = arrival.requestIdentity;
  const ids: IdSource = stableIdentity ? (index) => derivedIds(`${stableIdentity}/${index}`) : () => deps.newId;

  const validation = new CandidateValidation(arrival.receivedAtMicros, ids);
  const accepted: EncodedTrace[] = [];
  // Encoded as soon as it validates, so the normalized copy dies young instead of outliving the reserve
  // (less handler CPU on a full batch), at the price of encoding a batch the rate windows then refuse.
  for (const valid of validation.validTraces(candidates)) accepted.push(encodeTrace(requestContext, requestIdentity, valid));
  const { errors, droppedSpans } = validation;
  const result: IngestResult = { accepted: accepted.length, rejected: errors.length, errors, droppedSpans, orgId: org.orgId, apiKeyId: key.keyId };
  if (accepted.length === 0) return { ...result, quotaState: await readQuotaState(deps, caller, arrival) };

  let reservation;
  try {
    arrival.signal?.throwIfAborted();
    reservation = await reserveRateWindows(deps, caller, arrival, accepted.length);
  } catch (error) {
    if (error instanceof IngestError && error.status === 429) {
      const known = error instanceof RateLimitedError && error.usage ? { [error.window]: error.usage.used } : {};
      error.quotaState = await readQuotaState(deps, caller, arrival, known);
    }
    throw error;
  }
  // Read beside the publish, after the reservation, so the answer waits for neither twice.
  const quotaState = readQuotaState(deps, caller, arrival, {}, accepted.length);
  try {
    // Answered already (the deadline 503): publish nothing more; what was never sent is given back below.
    arrival.signal?.throwIfAborted();
    await publishTraces(deps, accepted, arrival);
  } catch (error) {
    // Quota is given back only for traces known not to be stored; the rest stay counted (the safe direction).
    const notWritten = error instanceof PublishIncompleteError ? error.notWritten : accepted.length;
    if (notWritten > 0) await reservation.giveBack(notWritten);
    throw publishUnavailable(error, arrival.signal?.aborted === true);
  }
  return { ...result, quotaState: await quotaState };
}
