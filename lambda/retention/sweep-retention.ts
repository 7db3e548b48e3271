import type { LakeStore } from '../lake/ports.js';
import { type HourDeletion, expireHour } from '../lake/lifecycle/expire-hour.js';
import { type RetentionPlan, type RetentionPlanDeps, planRetention } from './plan-retention.js';

export interface RetentionSweep extends RetentionPlan {
  /** Hours deleted in this process, in the order they were deleted. */
  deleted: HourDeletion[];
  objectsDeleted: number;
  bytesDeleted: number;
}

/**
 * The retention sweep in one process (`npm start`'s timer, `npm run compact`, the tests and the bench): the plan,
 * with each expired hour deleted here and now instead of queued. The caller holds the compaction lock, so no
 * compaction of the hour runs meanwhile (deployed, the hour's message group does that).
 */
export async function sweepRetention(deps: Omit<RetentionPlanDeps, 'sink'> & { store: Pick<LakeStore, 'list' | 'delete'> }): Promise<RetentionSweep> {
  const deleted: HourDeletion[] = [];
  const plan = await planRetention({
    ...deps,
    sink: {
      expire: async (hours) => {
        for (const hour of hours) deleted.push(await expireHour(deps.store, hour));
      },
    },
  });
  const overflowObjects = plan.organizations.reduce((sum, org) => sum + org.overflowObjectsDeleted, 0);
  const overflowBytes = plan.organizations.reduce((sum, org) => sum + org.overflowBytesDeleted, 0);
  return {
    ...plan,
    deleted,
    objectsDeleted: overflowObjects + deleted.reduce((sum, hour) => sum + hour.objectsDeleted, 0),
    bytesDeleted: overflowBytes + deleted.reduce((sum, hour) => sum + hour.bytesDeleted, 0),
  };
}
