import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { S3Client } from '@aws-sdk/client-s3';
import { ENV, requireEnv } from '../shared/runtime/env-names.js';
import { createLandingHandler } from './create-landing-handler.js';
import { S3LandingStore } from './s3-landing-store.js';

// Composition root: configuration is read and clients are created once per container.
const dataBucket = requireEnv(ENV.dataBucket);
const s3 = new S3Client({ maxAttempts: 3, forcePathStyle: process.env[ENV.s3ForcePathStyle] === 'true' });

export const handler = createLandingHandler({
  deps: { store: new S3LandingStore(s3, dataBucket) },
  logger: new Logger({ serviceName: 'trace-landing' }),
  metrics: new Metrics({ namespace: 'TraceIngest', serviceName: 'trace-landing' }),
});
