import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { type CompactionRun, type PendingOptions, compactPending } from './compact-pending.js';
import type { CompactionDeps } from './compact-slice.js';

/** Time kept in hand when the run stops starting new slices: the largest slice's compaction must still fit. */
export const STOP_BEFORE_TIMEOUT_MS = 5 * 60 * 1000;

export class CompactionRunError extends Error {
  override name = 'CompactionRunError';
}

export interface CompactionHandlerOptions {
  deps: Omit<CompactionDeps, 'logger'>;
  logger: Logger;
  metrics: Metrics;
  pending?: Omit<PendingOptions, 'shouldContinue'>;
}

/**
 * The scheduled compaction: compacts every closed hour with raw objects not yet covered, and fails the
 * invocation (so the `Errors` alarm fires) when any slice failed; those slices stay on their raw objects,
 * readable, until a later run succeeds.
 */
export function createCompactionHandler({ deps, logger, metrics, pending }: CompactionHandlerOptions) {
  return async (_event: unknown, context?: Pick<Context, 'getRemainingTimeInMillis'>): Promise<Omit<CompactionRun, 'compacted'> & { compacted: number }> => {
    try {
      const run = await compactPending(
        { ...deps, logger },
        { ...pending, shouldContinue: () => !context || context.getRemainingTimeInMillis() > STOP_BEFORE_TIMEOUT_MS },
      );
      const sum = (pick: (c: CompactionRun['compacted'][number]) => number) => run.compacted.reduce((total, c) => total + pick(c), 0);
      metrics.addMetric('SlicesCompacted', MetricUnit.Count, run.compacted.filter((c) => c.outcome === 'compacted').length);
      metrics.addMetric('SlicesFailed', MetricUnit.Count, run.failed.length);
      metrics.addMetric('RowsCompacted', MetricUnit.Count, sum((c) => c.rowsRead));
      metrics.addMetric('DuplicateRowsDropped', MetricUnit.Count, sum((c) => c.duplicatesDropped));
      metrics.addMetric('CompactionStoppedEarly', MetricUnit.Count, run.stoppedEarly ? 1 : 0);
      const summary = { ...run, compacted: run.compacted.length };
      logger.info('Compaction run finished', summary);
      if (run.failed.length > 0) throw new CompactionRunError(`${run.failed.length} slice(s) not compacted: ${run.failed.map((f) => `${f.slice} (${f.error})`).join('; ')}`);
      return summary;
    } finally {
      metrics.publishStoredMetrics();
    }
  };
}
