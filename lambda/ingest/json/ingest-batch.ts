import { derivedIds } from '../../shared/domain/derived-ids.js';
import { PublishIncompleteError } from '../../shared/domain/errors.js';
import { IngestError, publishUnavailable, RateLimitedError, refusedFor } from '../core/errors.js';
import type { Arrival, Caller, IngestRequest, IngestResult } from '../core/ingest-types.js';
import type { IngestDeps } from '../core/ports.js';
import { decodeBody } from '../http/decode-body.js';
import { parseBatch } from './parse-batch.js';
import { checkWorkspaceScope } from '../core/tenancy/check-workspace-scope.js';
import { identifyCaller } from '../core/tenancy/identify-caller.js';
import { idempotentRequestIdentity, readIdempotencyKey, withIdempotency } from '../core/idempotency/idempotency.js';
import { publishTraces } from '../core/publish/publish-traces.js';
import { readQuotaState } from '../core/rate/read-quota-state.js';
import { reserveRateWindows } from '../core/rate/reserve-rate-windows.js';
import { type IdSource, type TraceOptions, validateTraces } from '../core/validation/validate-candidates.js';
import { formatMicros } from '../core/validation/timestamps.js';

/**
 * The ingest use case, in the order of checks of docs/contract.md §1: authenticate, plan, billing, body,
 * workspace scope, per-trace validation, rate windows, publish. Throws an `IngestError` for every
 * refusal; an Idempotency-Key makes a resend safe.
 */
export async function ingestBatch(deps: IngestDeps, request: IngestRequest): Promise<IngestResult> {
  const caller = await identifyCaller(deps.tenancy, request.apiKeyValues);
  return refusedFor(caller.org.orgId, () => ingestBatchOf(deps, caller, request));
}

async function ingestBatchOf(deps: IngestDeps, caller: Caller, request: IngestRequest): Promise<IngestResult> {
  const idempotencyKey = deps.idempotency ? readIdempotencyKey(request.idempotencyKeyValues) : undefined;
  const body = decodeBody(request.body);
  const traces = parseBatch(body);
  if (!deps.idempotency || idempotencyKey === undefined) return ingestTraces(deps, caller, request, traces);
  // Before the key is looked at: a replay answers only a caller who may send this batch at all.
  await checkWorkspaceScope(deps.tenancy, caller.key, traces);
  const { orgId } = caller.org;
  const { receivedAtMicros } = request;
  const arrival = { ...request, requestIdentity: idempotentRequestIdentity(orgId, idempotencyKey, body) };
  const run = () => ingestScopedTraces(deps, caller, arrival, traces);
  const result = await withIdempotency({ store: deps.idempotency, log: deps.log, orgId, apiKeyId: caller.key.keyId, idempotencyKey, body, receivedAtMicros }, run);
  // A replayed answer reports the windows as they are now, not as they were when it was stored.
  return result.quotaState ? result : { ...result, quotaState: await readQuotaState(deps, caller, request) };
}

/**
 * Checks 6 to 10 on trace objects already taken out of a request, whatever its wire format:
 * workspace scope, per-trace validation, rate windows, publish.
 */
export async function ingestTraces(
  deps: IngestDeps,
  caller: Caller,
  arrival: Arrival,
  traces: readonly unknown[],
  options?: TraceOptions,
): Promise<IngestResult> {
  await checkWorkspaceScope(deps.tenancy, caller.key, traces);
  return ingestScopedTraces(deps, caller, arrival, traces, options);
}

/** Checks 8 to 10 (per-trace validation, rate windows, publish) on traces whose workspace scope was checked. */
async function ingestScopedTraces(
  deps: IngestDeps,
  caller: Caller,
  arrival: Arrival,
  traces: readonly unknown[],
  options?: TraceOptions,
): Promise<IngestResult> {
  const { key, org } = caller;
  const requestContext = {
    org_id: org.orgId,
    api_key_id: key.keyId,
    request_id: arrival.requestId,
    received_at: formatMicros(arrival.receivedAtMicros),
  };
  const requestIdentity = arrival.requestIdentity ?? arrival.requestId;
  // A resend under the same Idempotency-Key must generate the same ids, or its copies land as new traces.
  const stableIdentity = arrival.requestIdentity;
  const ids: IdSource = stableIdentity ? (index) => derivedIds(`${stableIdentity}/${index}`) : () => deps.newId;
  const { accepted, errors } = validateTraces(traces, requestContext, requestIdentity, arrival.receivedAtMicros, ids, options);
  const result: IngestResult = { accepted: accepted.length, rejected: errors.length, errors, orgId: org.orgId, apiKeyId: key.keyId };
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
    await publishTraces(deps, accepted, arrival.signal);
  } catch (error) {
    // Quota is given back only for traces known not to be stored; the rest stay counted (the safe direction).
    const notWritten = error instanceof PublishIncompleteError ? error.notWritten : accepted.length;
    if (notWritten > 0) await reservation.giveBack(notWritten);
    throw publishUnavailable(error);
  }
  return { ...result, quotaState: await quotaState };
}
