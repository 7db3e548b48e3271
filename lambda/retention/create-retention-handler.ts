import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SliceQueue } from '../compaction/plan-compaction.js';
import { expiryMessage } from './expiry-message.js';
import { type RetentionPlan, type RetentionPlanDeps, planRetention } from './plan-retention.js';

export interface RetentionHandlerOptions {
  deps: Omit<RetentionPlanDeps, 'logger' | 'sink'>;
  /** The compaction queue: each expired hour is deleted by a worker, in the hour's message group. */
  queue: SliceQueue;
  logger: Logger;
  metrics: Metrics;
}

/**
 * The scheduled retention sweep: finds every organization's hours past its retention and queues their deletion
 * on the compaction queue (overflow objects it deletes itself). A failure fails the invocation, so the
 * `RetentionSweepErrors` alarm sees it; the next hourly run finds whatever is still there.
 */
export function createRetentionHandler({ deps, queue, logger, metrics }: RetentionHandlerOptions) {
  return async (): Promise<RetentionPlan> => {
    try {
      const plan = await planRetention({
        ...deps,
        logger,
        sink: { expire: (hours) => queue.send(hours.map((hour) => expiryMessage(hour, (deps.now ?? (() => new Date()))()))) },
      });
      const sum = (pick: (org: RetentionPlan['organizations'][number]) => number) => plan.organizations.reduce((total, org) => total + pick(org), 0);
      metrics.addMetric('HoursPlannedForExpiry', MetricUnit.Count, sum((org) => org.hoursExpired + org.hoursCleared));
      metrics.addMetric('OverflowObjectsExpired', MetricUnit.Count, sum((org) => org.overflowObjectsDeleted));
      metrics.addMetric('OrganizationsSwept', MetricUnit.Count, plan.organizations.length);
      logger.info('Retention swept', { organizations: plan.organizations.length, kept: plan.kept, hours: sum((org) => org.hoursExpired + org.hoursCleared), overflowObjects: sum((org) => org.overflowObjectsDeleted) });
      return plan;
    } finally {
      metrics.publishStoredMetrics();
    }
  };
}
