/**
 * Values the stack (lib/), the Lambdas and the local stack must agree on, defined once. lib/ may
 * import this file; lambda/ never imports lib/.
 */

/** The ingest route of the API. */
export const INGEST_ROUTE = { method: 'POST', path: '/v1/traces/ingest' } as const;

/** The OTLP/HTTP traces route: exporters append `/v1/traces` to `OTEL_EXPORTER_OTLP_ENDPOINT={base_url}/otel`. */
export const OTLP_ROUTE = { method: 'POST', path: '/otel/v1/traces' } as const;

/** How every "no such route" answer names the routes, built from them so that it cannot fall behind. */
export const ROUTES_SENTENCE = `The API has two routes: ${INGEST_ROUTE.method} ${INGEST_ROUTE.path} and ${OTLP_ROUTE.method} ${OTLP_ROUTE.path}.`;

/** The CloudWatch namespace every function's metrics go to, and the `service` dimension of each: the alarms watch these. */
export const METRICS_NAMESPACE = 'TraceIngest';
export const SERVICE_NAMES = { ingest: 'trace-ingest', landing: 'trace-landing', compaction: 'trace-compaction', retention: 'trace-retention' } as const;

/** Organizations a retention sweep left alone for a stored `retention_days` that is not one: the sweeper counts them, an alarm watches the count. */
export const INVALID_RETENTION_METRIC = 'OrganizationsWithInvalidRetention';

/** Key prefixes of the data bucket: the key builders write under them, the grants and lifecycle rules name them. */
export const DATA_PREFIXES = {
  overflow: 'overflow/',
  traces: 'traces/',
  spans: 'spans/',
  deadLetter: 'dead-letter/',
  athenaResults: 'athena-results/',
  compacted: 'compacted/',
  /** Part plans of slices split across part workers: under `compacted/`, outside the compacted tables' locations. */
  partPlans: 'compacted/plans/',
  manifests: 'manifests/',
  /** Erasure requests and their per-hour outcomes (lambda/erasure/). */
  erasures: 'erasures/',
} as const;

/** Function timeouts. Ingest stays below API Gateway's 29 s integration timeout so the function answers, not the gateway. */
export const FUNCTION_TIMEOUT_SECONDS = { ingest: 25, landing: 120, compactionWorker: 900 } as const;

/**
 * Visibility timeout of the compaction queue: six times the worker's timeout, AWS's guidance for a Lambda source
 * queue, so a message is never handed out again while the invocation that received it may still be compacting.
 */
export const COMPACTION_QUEUE_VISIBILITY_SECONDS = 6 * FUNCTION_TIMEOUT_SECONDS.compactionWorker;

/** Receives of one compaction message before SQS moves it to the dead-letter queue: at least 5, as AWS advises for Lambda. */
export const COMPACTION_MAX_RECEIVE_COUNT = 5;
