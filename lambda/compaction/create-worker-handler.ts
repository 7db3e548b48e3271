import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { CompactionDeps } from './ports.js';
import { compactQueuedSlices } from './compact-queued-slices.js';

/** Brings a failed message back sooner than the queue's visibility timeout would. */
export interface SliceRetries {
  retryAfter(receiptHandle: string, seconds: number): Promise<void>;
}

/** Delay before the first retry of a failed slice; it doubles with every receive. */
export const FIRST_RETRY_SECONDS = 5 * 60;

/**
 * Seconds until a message that failed on its `receiveCount`-th receive is handed out again: 5, 10, 20, 40, 80
 * minutes, never more than the queue's own visibility timeout.
 */
export function retryDelaySeconds(receiveCount: number, visibilityTimeoutSeconds: number): number {
  return Math.min(visibilityTimeoutSeconds, FIRST_RETRY_SECONDS * 2 ** Math.max(0, receiveCount - 1));
}

export interface WorkerHandlerOptions {
  deps: Omit<CompactionDeps, 'logger'>;
  logger: Logger;
  metrics: Metrics;
  /** Without it a failed slice waits out the queue's whole visibility timeout. */
  retries?: { scheduler: SliceRetries; visibilityTimeoutSeconds: number };
}

/**
 * The queue worker: compacts the slices of an SQS batch (or their parts, or switches them to their parts) and
 * reports the ones that failed, and switches still waiting for their parts, as batch item failures
 * (`ReportBatchItemFailures`), so that SQS retries them alone and moves them to the dead-letter queue after the
 * queue's `maxReceiveCount`. A failed message's visibility is first cut to the backoff of
 * {@link retryDelaySeconds}: safe, because the compaction of its slice has ended by then, and the queue's long
 * visibility timeout exists only to cover a compaction that is still running. A waiting switch is retried the
 * same way: 5 minutes, then 10, 20, 40; its parts run in parallel and each is sized to finish in ~10 minutes. Never throws for a failed slice;
 * a crash or timeout retries the whole batch after the visibility timeout.
 */
export function createWorkerHandler({ deps, logger, metrics, retries }: WorkerHandlerOptions) {
  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    try {
      const outcome = await compactQueuedSlices(
        { ...deps, logger },
        event.Records.map((record) => ({ messageId: record.messageId, body: record.body })),
      );
      const sum = (pick: (c: (typeof outcome.compacted)[number]) => number) => outcome.compacted.reduce((total, c) => total + pick(c), 0);
      metrics.addMetric('SlicesCompacted', MetricUnit.Count, outcome.compacted.filter((c) => c.outcome === 'compacted').length);
      metrics.addMetric('SlicesFailed', MetricUnit.Count, outcome.failed.length);
      metrics.addMetric('RowsCompacted', MetricUnit.Count, sum((c) => c.rowsRead) + outcome.parts.reduce((total, p) => total + p.rowsRead, 0));
      metrics.addMetric('SlicePartsCompacted', MetricUnit.Count, outcome.parts.filter((p) => p.outcome === 'written').length);
      metrics.addMetric('SwitchesWaiting', MetricUnit.Count, outcome.waiting.length);
      metrics.addMetric('HoursExpired', MetricUnit.Count, outcome.expired.length);
      metrics.addMetric('ObjectsExpired', MetricUnit.Count, outcome.expired.reduce((total, hour) => total + hour.objectsDeleted, 0));
      metrics.addMetric('DuplicateRowsDropped', MetricUnit.Count, sum((c) => c.duplicatesDropped));
      if (outcome.failed.length > 0) logger.error('Slices left on the queue for a retry', { failed: outcome.failed });
      if (outcome.waiting.length > 0) logger.info('Switches left on the queue until their parts are written', { waiting: outcome.waiting });
      if (retries) {
        for (const record of event.Records.filter((r) => outcome.failedMessageIds.includes(r.messageId))) {
          const seconds = retryDelaySeconds(Number(record.attributes.ApproximateReceiveCount) || 1, retries.visibilityTimeoutSeconds);
          // Best effort: if this fails, the message comes back after the queue's visibility timeout instead.
          await retries.scheduler.retryAfter(record.receiptHandle, seconds).catch((error: unknown) => logger.warn('Could not shorten the retry delay of a failed slice', { messageId: record.messageId, error }));
        }
      }
      return { batchItemFailures: outcome.failedMessageIds.map((itemIdentifier) => ({ itemIdentifier })) };
    } finally {
      metrics.publishStoredMetrics();
    }
  };
}
