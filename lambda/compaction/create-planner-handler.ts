import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { PendingOptions } from './compact-pending.js';
import { type CompactionPlan, type PlannerDeps, planCompaction } from './plan-compaction.js';
import { type ErasurePlannerDeps, sendErasureSlices } from './send-erasure-slices.js';

export interface PlannerHandlerOptions {
  deps: Omit<PlannerDeps, 'logger'>;
  logger: Logger;
  metrics: Metrics;
  pending?: PendingOptions;
  /** The erasure requests and the stack's secret: each run also plans the hours open requests need (see send-erasure-slices.ts). */
  erasures?: Pick<ErasurePlannerDeps, 'erasures' | 'secret'>;
}

/**
 * The scheduled planner: sends every pending closed hour to the compaction queue. A failure (listing, reading,
 * sending) fails the invocation, so the `CompactionPlannerErrors` alarm sees it; the next run plans again.
 */
export function createPlannerHandler({ deps, logger, metrics, pending, erasures }: PlannerHandlerOptions) {
  return async (): Promise<CompactionPlan> => {
    try {
      const plan = await planCompaction({ ...deps, logger }, pending);
      if (erasures) {
        const erasing = await sendErasureSlices({ ...erasures, store: deps.store, queue: deps.queue, ...(deps.now ? { now: deps.now } : {}) });
        plan.planned.erasure = erasing.slices.length;
        metrics.addMetric('ErasureHoursPlanned', MetricUnit.Count, erasing.slices.length);
        // Ids only: a request's selector is never logged.
        if (erasing.found.length + erasing.finished.length + erasing.slices.length > 0) logger.info('Erasures planned', { found: erasing.found, finished: erasing.finished, hours: erasing.slices.length });
      }
      metrics.addMetric('SlicesPlanned', MetricUnit.Count, Object.values(plan.planned).reduce((sum, n) => sum + n, 0));
      metrics.addMetric('SlicesSeen', MetricUnit.Count, plan.slicesSeen);
      logger.info('Compaction planned', { ...plan });
      return plan;
    } finally {
      metrics.publishStoredMetrics();
    }
  };
}
