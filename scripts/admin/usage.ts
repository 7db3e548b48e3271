import type { WindowUsageReader } from '../../lambda/ingest/core/rate/ports.js';
import { countersFor, windowBounds } from '../../lambda/shared/domain/rate-windows.js';
import { RATE_WINDOWS, type RateWindow } from '../../lambda/shared/domain/tenancy.js';
import { type AdminDeps, AdminCommandError, organizationWithQuotas, type RetentionView, retentionView } from './commands.js';

export type { WindowUsageReader };

export interface WindowUsageView {
  window: RateWindow;
  /** Traces allowed in the window; `null` is unlimited (nothing is counted then). */
  quota: number | null;
  used: number | null;
  remaining: number | null;
  /** When the window ends and its count starts again from 0 (UTC). */
  resets_at: string;
  resets_in_seconds: number;
}

/**
 * `org usage`: each window of the organization now, read consistently from the rate-window table.
 * `used` includes quota that ingest containers hold as leases and have not used yet (docs/api.md,
 * "Rate limits"), so it can run ahead of the traces accepted.
 */
export async function organizationUsage(
  deps: AdminDeps & { usage: WindowUsageReader },
  orgId: string,
): Promise<{ org_id: string; plan: string; at: string; windows: WindowUsageView[]; retention: RetentionView }> {
  const { org, quotas } = await organizationWithQuotas(deps, orgId);
  if (!quotas) {
    throw new AdminCommandError(`organization '${orgId}' is on plan '${org.plan}', which does not exist: ingest answers it 403 no_active_plan; create the plan or move the organization`);
  }
  const at = deps.now();
  const allQuotas = quotas;
  const counts = await deps.usage.read(orgId, countersFor(allQuotas, at));
  const windows = RATE_WINDOWS.map((window): WindowUsageView => {
    const quota = allQuotas[window];
    const used = quota === null ? null : (counts[window] ?? 0);
    const { endEpochSeconds } = windowBounds(window, at);
    return {
      window,
      quota,
      used,
      remaining: quota === null || used === null ? null : Math.max(0, quota - used),
      resets_at: new Date(endEpochSeconds * 1000).toISOString(),
      resets_in_seconds: Math.ceil(endEpochSeconds - at.getTime() / 1000),
    };
  });
  const retention = retentionView(org, await deps.store.getPlan(org.plan), deps.retentionCeilingDays);
  return { org_id: org.orgId, plan: org.plan, at: at.toISOString(), windows, retention };
}
