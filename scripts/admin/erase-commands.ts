import { type ErasureRequest, type ErasureSelector, InvalidErasureError, newRequest } from '../../lambda/erasure/erasure-record.js';
import { type ErasureStatusView, type StoredErasures, erasureStatus } from '../../lambda/erasure/stored-erasures.js';
import { type AdminDeps, AdminCommandError, requireOrganization } from './commands.js';

/** The erasure requests, as the admin commands reach them (the data bucket). */
export interface EraseDeps extends AdminDeps {
  erasures: StoredErasures;
}

/** At most this many selector values per request: each is matched against every row of the hours rewritten. */
export const MAX_SELECTOR_VALUES = 1000;

/**
 * `erase create`: records a request for one organization; from then on the views leave its traces out, and the next
 * planner run (locally: `npm run compact` or the timer of `npm start`) rewrites the hours that hold them.
 */
export async function createErasure(deps: EraseDeps, orgId: string, selector: ErasureSelector): Promise<{ erasure_id: string; status: ErasureRequest['status']; org_id: string; requested_at: string }> {
  const count = selector.user_ids.length + selector.session_ids.length + selector.trace_ids.length;
  if (count === 0) throw new AdminCommandError("'erase create' needs --user-id, --session-id or --trace-id (each may be repeated)");
  if (count > MAX_SELECTOR_VALUES) throw new AdminCommandError(`'erase create' takes at most ${MAX_SELECTOR_VALUES} ids per request, not ${count}`);
  if ([...selector.user_ids, ...selector.session_ids, ...selector.trace_ids].some((value) => value === '')) throw new AdminCommandError('an id to erase must not be empty');
  await requireOrganization(deps, orgId);
  let request: ErasureRequest;
  try {
    request = newRequest(orgId, selector, deps.now());
  } catch (error) {
    if (error instanceof InvalidErasureError) throw new AdminCommandError(`--trace-id ${error.message}`, { cause: error });
    throw error;
  }
  await deps.erasures.put(request);
  return { erasure_id: request.erasure_id, status: request.status, org_id: orgId, requested_at: request.requested_at };
}

/** The organization of an erasure id: ids are `er_<32 hex>`, and the request is kept under its organization. */
async function findRequest(deps: EraseDeps, erasureId: string, orgId: string | undefined): Promise<ErasureRequest> {
  if (!/^er_[0-9a-f]{32}$/.test(erasureId)) throw new AdminCommandError(`'${erasureId}' is not an erasure id (er_ and 32 hex digits)`);
  const request = orgId === undefined ? await deps.erasures.requestById(erasureId) : await deps.erasures.request(orgId, erasureId);
  if (!request) throw new AdminCommandError(`no erasure ${erasureId}${orgId === undefined ? '' : ` in organization '${orgId}'`}`);
  return request;
}

export async function showErasure(deps: EraseDeps, erasureId: string, orgId?: string): Promise<ErasureStatusView> {
  return erasureStatus(deps.erasures, await findRequest(deps, erasureId, orgId));
}

export async function listErasures(deps: EraseDeps, orgId: string): Promise<{ org_id: string; erasures: ErasureStatusView[] }> {
  await requireOrganization(deps, orgId);
  const requests = await deps.erasures.requests(orgId);
  return { org_id: orgId, erasures: await Promise.all(requests.map((request) => erasureStatus(deps.erasures, request))) };
}
