import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { CompactionDeps } from './compact-slice.js';
import { compactQueuedSlices } from './compact-queued-slices.js';

export interface WorkerHandlerOptions {
  deps: Omit<CompactionDeps, 'logger'>;
  logger: Logger;
  metrics: Metrics;
}

/**
 * The queue worker: compacts the slices of an SQS batch and reports the ones that failed as batch item failures
 * (`ReportBatchItemFailures`), so that SQS retries them alone and moves them to the dead-letter queue after the
 * queue's `maxReceiveCount`. Never throws for a failed slice; a crash or timeout retries the whole batch.
 */
export function createWorkerHandler({ deps, logger, metrics }: WorkerHandlerOptions) {
  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    try {
      const outcome = await compactQueuedSlices(
        { ...deps, logger },
        event.Records.map((record) => ({ messageId: record.messageId, body: record.body })),
      );
      const sum = (pick: (c: (typeof outcome.compacted)[number]) => number) => outcome.compacted.reduce((total, c) => total + pick(c), 0);
      metrics.addMetric('SlicesCompacted', MetricUnit.Count, outcome.compacted.filter((c) => c.outcome === 'compacted').length);
      metrics.addMetric('SlicesFailed', MetricUnit.Count, outcome.failed.length);
      metrics.addMetric('RowsCompacted', MetricUnit.Count, sum((c) => c.rowsRead));
      metrics.addMetric('DuplicateRowsDropped', MetricUnit.Count, sum((c) => c.duplicatesDropped));
      if (outcome.failed.length > 0) logger.error('Slices left on the queue for a retry', { failed: outcome.failed });
      return { batchItemFailures: outcome.failedMessageIds.map((itemIdentifier) => ({ itemIdentifier })) };
    } finally {
      metrics.publishStoredMetrics();
    }
  };
}
