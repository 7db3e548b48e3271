import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';

/** A logger that prints nothing and metrics under a test namespace, for `composeIngest` / `composeLanding`. */
export function quietTelemetry(serviceName = 'test') {
  return { logger: new Logger({ serviceName, logLevel: 'SILENT' }), metrics: new Metrics({ namespace: 'Test', serviceName }) };
}
