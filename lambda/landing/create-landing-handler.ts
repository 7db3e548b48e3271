import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { KinesisStreamEvent, KinesisStreamRecord } from 'aws-lambda';
import { landRecords } from './land-records.js';
import type { LandingRecord } from './landing-types.js';
import type { LandingDeps } from './ports.js';

/** Maps an event source mapping record (`eventID` is `<shardId>:<sequenceNumber>`). */
export function fromKinesisEventRecord(record: KinesisStreamRecord): LandingRecord {
  return {
    shardId: record.eventID.slice(0, record.eventID.indexOf(':')),
    sequenceNumber: record.kinesis.sequenceNumber,
    data: Buffer.from(record.kinesis.data, 'base64'),
    approximateArrivalTimestamp: new Date(record.kinesis.approximateArrivalTimestamp * 1000),
  };
}

export interface LandingHandlerOptions {
  deps: Omit<LandingDeps, 'logger'>;
  logger: Logger;
  metrics: Metrics;
}

/**
 * The consumer: lands the whole batch or throws. It never returns partial `batchItemFailures`
 * (see docs/landing.md: a checkpoint inside a batch would change the object keys of its retry).
 */
export function createLandingHandler({ deps, logger, metrics }: LandingHandlerOptions) {
  return async (event: KinesisStreamEvent): Promise<void> => {
    const records = event.Records.map(fromKinesisEventRecord);
    const first = records[0];
    const range = first && { shardId: first.shardId, firstSequenceNumber: first.sequenceNumber, lastSequenceNumber: records.at(-1)?.sequenceNumber };
    metrics.addMetric('RecordsIn', MetricUnit.Count, records.length);
    try {
      const summary = await landRecords({ ...deps, logger }, records);
      metrics.addMetric('TraceRowsLanded', MetricUnit.Count, summary.rows.traces);
      metrics.addMetric('SpanRowsLanded', MetricUnit.Count, summary.rows.spans);
      metrics.addMetric('RecordsDeadLettered', MetricUnit.Count, summary.deadLettered);
      metrics.addMetric('BytesWritten', MetricUnit.Bytes, summary.bytesWritten);
      logger.info('Batch landed', { ...range, ...summary });
    } catch (error) {
      metrics.addMetric('BatchesFailed', MetricUnit.Count, 1);
      logger.error('Batch not landed; it will be retried from its first record', { ...range, error: error as Error });
      throw error;
    } finally {
      metrics.publishStoredMetrics();
    }
  };
}
