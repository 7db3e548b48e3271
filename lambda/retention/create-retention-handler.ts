import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SliceQueue } from '../compaction/plan-compaction.js';
import { expiryMessage } from './expiry-message.js';
import { INVALID_RETENTION_METRIC } from '../shared/service-constants.js';
import { type RetentionPlan, type RetentionPlanDeps, RetentionSweepError, planRetention } from './plan-retention.js';

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
  const count = (plan: RetentionPlan) => {
    const sum = (pick: (org: RetentionPlan['organizations'][number]) => number) => plan.organizations.reduce((total, org) => total + pick(org), 0);
    const totals = { organizations: plan.organizations.length, kept: plan.kept, skipped: plan.skipped.length, hours: sum((org) => org.hoursExpired + org.hoursCleared), overflowObjects: sum((org) => org.overflowObjectsDeleted) };
    metrics.addMetric('HoursPlannedForExpiry', MetricUnit.Count, totals.hours);
    metrics.addMetric('OverflowObjectsExpired', MetricUnit.Count, totals.overflowObjects);
    metrics.addMetric('OrganizationsSwept', MetricUnit.Count, totals.organizations);
    metrics.addMetric(INVALID_RETENTION_METRIC, MetricUnit.Count, totals.skipped);
    return totals;
  };
  return async (): Promise<RetentionPlan> => {
    try {
      const plan = await planRetention({
        ...deps,
        logger,
        sink: { expire: (hours) => queue.send(hours.map((hour) => expiryMessage(hour, (deps.now ?? (() => new Date()))()))) },
      });
      logger.info('Retention swept', count(plan));
      return plan;
    } catch (error) {
      // A run that failed for one organization still counts what it did and skipped for the others: an invalid
      // retention keeps its alarm in ALARM while another organization's listing fails.
      if (error instanceof RetentionSweepError) count(error.plan);
      throw error;
    } finally {
      metrics.publishStoredMetrics();
    }
  };
}
