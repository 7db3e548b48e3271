import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { S3Client } from '@aws-sdk/client-s3';
import { ENV, requireEnv } from '../shared/runtime/env-names.js';
import type { PendingOptions } from './compact-pending.js';
import type { CompactionStore } from './compact-slice.js';
import { createCompactionHandler } from './create-compaction-handler.js';
import { S3CompactionStore } from './s3-compaction-store.js';

/** Everything that varies between the deployed function, the local stack and the tests. */
export interface CompactionConfig {
  /** The data bucket; needed unless `store` is given. */
  dataBucket?: string;
  s3?: S3Client;
  s3ForcePathStyle?: boolean;
  store?: CompactionStore;
  rowsPerPart?: number;
  pending?: Omit<PendingOptions, 'shouldContinue'>;
  logger?: Logger;
  metrics?: Metrics;
}

/** The configuration of the deployed function, read from its environment once at cold start. */
export function compactionConfigFromEnv(env: NodeJS.ProcessEnv = process.env): CompactionConfig {
  return { dataBucket: requireEnv(ENV.dataBucket, env), s3ForcePathStyle: env[ENV.s3ForcePathStyle] === 'true' };
}

/** V8's full collection, present when Node runs with `--expose-gc` (the deployed function's NODE_OPTIONS). */
const exposedGc = (globalThis as { gc?: () => void }).gc;

/** The one composition root of the compaction function, for the deployed handler, the local stack and the tests. */
export function composeCompaction(config: CompactionConfig) {
  const store = config.store ?? compactionStore(config);
  return createCompactionHandler({
    deps: { store, ...(config.rowsPerPart ? { rowsPerPart: config.rowsPerPart } : {}), ...(exposedGc ? { collectGarbage: exposedGc } : {}) },
    logger: config.logger ?? new Logger({ serviceName: 'trace-compaction' }),
    metrics: config.metrics ?? new Metrics({ namespace: 'TraceIngest', serviceName: 'trace-compaction' }),
    ...(config.pending ? { pending: config.pending } : {}),
  });
}

function compactionStore(config: CompactionConfig): S3CompactionStore {
  if (config.dataBucket === undefined) throw new Error('composeCompaction: dataBucket is needed unless a store is given');
  return new S3CompactionStore(config.s3 ?? new S3Client({ maxAttempts: 5, forcePathStyle: config.s3ForcePathStyle === true }), config.dataBucket);
}
