import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { S3Client } from '@aws-sdk/client-s3';
import { ENV, requireEnv } from '../shared/runtime/env-names.js';
import { createLandingHandler } from './create-landing-handler.js';
import type { LandingDeps } from './ports.js';
import { S3LandingStore } from './s3-landing-store.js';
import { METRICS_NAMESPACE, SERVICE_NAMES } from '../shared/service-constants.js';

/** Everything that varies between the deployed function, the local stack and the tests. */
export interface LandingConfig {
  /** The data bucket; needed unless `store` is given. */
  dataBucket?: string;
  /** The client to use instead of the default one. */
  s3?: S3Client;
  /** Set for S3 emulators that need path-style addressing (the local stack). */
  s3ForcePathStyle?: boolean;
  /** A store to use instead of `S3LandingStore`. */
  store?: LandingDeps['store'];
  rowsPerRowGroup?: number;
  maxUploadsInFlight?: number;
  logger?: Logger;
  metrics?: Metrics;
}

/** The configuration of the deployed function, read from its environment once at cold start. */
export function landingConfigFromEnv(env: NodeJS.ProcessEnv = process.env): LandingConfig {
  return { dataBucket: requireEnv(ENV.dataBucket, env), s3ForcePathStyle: env[ENV.s3ForcePathStyle] === 'true' };
}

/** The one composition root of the landing function, for the deployed handler, the local stack and the tests. */
export function composeLanding(config: LandingConfig) {
  const store = config.store ?? landingStore(config);
  return createLandingHandler({
    deps: { store, rowsPerRowGroup: config.rowsPerRowGroup, maxUploadsInFlight: config.maxUploadsInFlight },
    logger: config.logger ?? new Logger({ serviceName: SERVICE_NAMES.landing }),
    metrics: config.metrics ?? new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAMES.landing }),
  });
}

function landingStore(config: LandingConfig): S3LandingStore {
  if (config.dataBucket === undefined) throw new Error('composeLanding: dataBucket is needed unless a store is given');
  return new S3LandingStore(config.s3 ?? new S3Client({ maxAttempts: 3, forcePathStyle: config.s3ForcePathStyle === true }), config.dataBucket);
}
