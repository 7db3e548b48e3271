import { isJsonObject } from '../../../shared/domain/json.js';
import { type ApiKey, WORKSPACE_SLUG_PATTERN } from '../../../shared/domain/tenancy.js';
import type { TraceDraft } from '../draft.js';
import { echo } from '../echo.js';
import { WorkspaceOutOfScopeError, WorkspaceRequiredError } from '../errors.js';
import type { TenancyReader } from './ports.js';

/**
 * Checks 6 and 7 (docs/contract.md §1): every trace object targets a workspace the key may reach. A
 * workspace-scoped key needs its own slug on every trace; an organization key needs slugs that
 * exist in its organization. One trace out of scope refuses the whole batch.
 */
export async function checkWorkspaceScope(tenancy: TenancyReader, key: ApiKey, candidates: readonly TraceDraft[]): Promise<void> {
  const traces = candidates.map((candidate) => candidate.trace);
  if (key.workspaceSlug !== null) {
    checkScopedKey(key.workspaceSlug, traces);
    return;
  }
  const slugs = new Set<string>();
  for (const trace of traces) {
    if (isJsonObject(trace) && typeof trace.workspace_slug === 'string' && trace.workspace_slug !== '') slugs.add(trace.workspace_slug);
  }
  const ordered = [...slugs];
  // A slug no workspace can have needs no lookup (and may not even fit in a DynamoDB key).
  const exists = await Promise.all(
    ordered.map((slug) => (WORKSPACE_SLUG_PATTERN.test(slug) ? tenancy.workspaceExists(key.orgId, slug) : false)),
  );
  const outside = ordered.find((_, i) => !exists[i]);
  if (outside !== undefined) {
    throw new WorkspaceOutOfScopeError(
      `workspace_slug '${echo(outside)}' is not in the API key scope: no such workspace in this organization`,
    );
  }
}

function checkScopedKey(keySlug: string, traces: readonly unknown[]): void {
  traces.forEach((trace, index) => {
    if (!isJsonObject(trace)) return;
    const slug = trace.workspace_slug;
    if (typeof slug !== 'string' || slug === '') {
      throw new WorkspaceRequiredError(`workspace_slug is required on every trace for a workspace-scoped API key: trace ${index} has none`);
    }
  });
  traces.forEach((trace) => {
    if (isJsonObject(trace) && trace.workspace_slug !== keySlug) {
      throw new WorkspaceOutOfScopeError(`workspace_slug '${echo(String(trace.workspace_slug))}' is not in the API key scope`);
    }
  });
}
