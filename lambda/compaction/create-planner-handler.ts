import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { PendingOptions } from './compact-pending.js';
import { type CompactionPlan, type PlannerDeps, planCompaction } from './plan-compaction.js';

export interface PlannerHandlerOptions {
  deps: Omit<PlannerDeps, 'logger'>;
  logger: Logger;
  metrics: Metrics;
  pending?: PendingOptions;
}

/**
 * The scheduled planner: sends every pending closed hour to the compaction queue. A failure (listing, reading,
 * sending) fails the invocation, so the `CompactionPlannerErrors` alarm sees it; the next run plans again.
 */
export function createPlannerHandler({ deps, logger, metrics, pending }: PlannerHandlerOptions) {
  return async (): Promise<CompactionPlan> => {
    try {
      const plan = await planCompaction({ ...deps, logger }, pending);
      metrics.addMetric('SlicesPlanned', MetricUnit.Count, Object.values(plan.planned).reduce((sum, n) => sum + n, 0));
      metrics.addMetric('SlicesSeen', MetricUnit.Count, plan.slicesSeen);
      logger.info('Compaction planned', { ...plan });
      return plan;
    } finally {
      metrics.publishStoredMetrics();
    }
  };
}
