import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { CompactionDeps } from '../lake/ports.js';
import { COMPACTION_MAX_RECEIVE_COUNT } from '../shared/service-constants.js';
import { compactQueuedSlices } from './compact-queued-slices.js';
import { renewedSwitch, type SliceMessage } from './slice-message.js';

/** Brings a failed message back sooner than the queue's visibility timeout would, and sends a waiting switch again. */
export interface SliceRetries {
  retryAfter(receiptHandle: string, seconds: number): Promise<void>;
  sendAgain(message: SliceMessage): Promise<void>;
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
  now?: () => Date;
}

/**
 * The queue worker: compacts the slices of an SQS batch (or their parts, or switches them to their parts) and
 * reports the ones that failed, and switches still waiting for their parts, as batch item failures
 * (`ReportBatchItemFailures`), so that SQS retries them alone and moves them to the dead-letter queue after the
 * queue's `maxReceiveCount`. A failed message's visibility is first cut to the backoff of
 * {@link retryDelaySeconds}: safe, because the compaction of its slice has ended by then, and the queue's long
 * visibility timeout exists only to cover a compaction that is still running. A waiting switch is retried the
 * same way: 5 minutes, then 10, 20, 40; its parts run in parallel and each is sized to finish in ~10 minutes. Waiting
 * is not failing: on the receive before the queue's `maxReceiveCount` a waiting switch is sent again as a fresh
 * message and this one deleted, so it never reaches the dead-letter queue while its parts may still come
 * ({@link renewedSwitch} bounds that). Never throws for a failed slice; a crash or timeout retries the whole batch
 * after the visibility timeout.
 */
export function createWorkerHandler({ deps, logger, metrics, retries, now = () => new Date() }: WorkerHandlerOptions) {
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
      const renewed = new Set<string>();
      if (retries) {
        for (const record of event.Records.filter((r) => outcome.failedMessageIds.includes(r.messageId))) {
          const receiveCount = Number(record.attributes.ApproximateReceiveCount) || 1;
          const waiting = outcome.waiting.some((w) => w.messageId === record.messageId);
          const again = waiting && receiveCount >= COMPACTION_MAX_RECEIVE_COUNT - 1 ? renewedSwitch(record.body, record.messageId, now()) : undefined;
          if (again) {
            const sent = await retries.scheduler.sendAgain(again).then(
              () => true,
              (error: unknown) => (logger.warn('Could not send a waiting switch again; it stays on its receives', { messageId: record.messageId, error }), false),
            );
            if (sent) {
              renewed.add(record.messageId);
              logger.info('A switch still waiting for its parts was sent again as a fresh message', { messageId: record.messageId, receiveCount });
              continue;
            }
          }
          const seconds = retryDelaySeconds(receiveCount, retries.visibilityTimeoutSeconds);
          // Best effort: if this fails, the message comes back after the queue's visibility timeout instead.
          await retries.scheduler.retryAfter(record.receiptHandle, seconds).catch((error: unknown) => logger.warn('Could not shorten the retry delay of a failed slice', { messageId: record.messageId, error }));
        }
      }
      return { batchItemFailures: outcome.failedMessageIds.filter((id) => !renewed.has(id)).map((itemIdentifier) => ({ itemIdentifier })) };
    } finally {
      metrics.publishStoredMetrics();
    }
  };
}
