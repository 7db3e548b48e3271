import type { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy, { type MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyResult, Context } from 'aws-lambda';
import { DeadlineReachedError, deadlineReached, IngestError } from './core/errors.js';
import { type GatewayEvent, requestIdOf } from './http/gateway.js';
import { ingestBatch } from './json/ingest-batch.js';
import { errorResponse, successResponse, toIngestRequest } from './json/json-http.js';
import { ingestOtlp } from './otlp/ingest-otlp.js';
import { isOtlpTracesEvent, otlpErrorResponse, otlpFormatOf, otlpSuccessResponse, toOtlpRequest } from './otlp/otlp-http.js';
import type { IngestDeps } from './core/ports.js';
import type { Arrival } from './core/ingest-types.js';

export interface IngestHandlerOptions {
  deps: Omit<IngestDeps, 'logger' | 'metrics'>;
  logger: Logger;
  metrics: Metrics;
  /** Microseconds since the epoch; injectable so tests can pin the clock. */
  nowMicros?: () => number;
}

const defaultNowMicros = () => Date.now() * 1000;
/**
 * How long before the function's timeout middy answers 503 itself, whatever the work is doing: the last resort,
 * for work that does not stop when asked (the function's timeout would otherwise make API Gateway answer 502/504).
 */
export const ANSWER_MARGIN_MS = 500;
/**
 * How long before the function's timeout the work is told to stop (the deadline signal): what it started is
 * abandoned, and it then gives back the quota of what it never published and releases its Idempotency-Key claim,
 * so both are done before the 503 goes out. Left on a frozen Lambda environment they would wait for its next thaw
 * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html: the environment is frozen
 * once the handler has answered), and a resend meanwhile met 409 for the claim's 120 s lock.
 */
export const DEADLINE_MARGIN_MS = 2_000;

/** The refusal in the encoding of the request's route: JSON for the ingest route, OTLP's own for exports. */
function refusalResponse(error: unknown, event: GatewayEvent, requestId: string): APIGatewayProxyResult {
  return isOtlpTracesEvent(event) ? otlpErrorResponse(error, otlpFormatOf(event), requestId) : errorResponse(error, requestId);
}

/** Last line of defence: whatever escapes the chain becomes a JSON 503, never a 500. */
function httpErrorBoundary(logger: Logger): MiddlewareObj<GatewayEvent, APIGatewayProxyResult> {
  return {
    onError: (request) => {
      if (request.error instanceof DeadlineReachedError) logger.error('Function deadline reached; answered 503');
      else logger.error('Unhandled error in ingest', { error: request.error as Error });
      request.response = refusalResponse(request.error, request.event, requestIdOf(request.event));
    },
  };
}

/** The request's deadline as the use case sees it (see {@link deadlineSignal}). */
type WorkDeadline = Pick<Arrival, 'signal' | 'deadlineAtMs'>;

interface Telemetry {
  logger: Logger;
  metrics: Metrics;
}

/** POST /v1/traces/ingest: runs the use case, counts and logs what it accepted, answers 200. */
async function serveBatch(deps: IngestDeps, { logger, metrics }: Telemetry, event: GatewayEvent, requestId: string, receivedAtMicros: number, deadline: WorkDeadline) {
  const result = await ingestBatch(deps, { ...toIngestRequest(event, requestId, receivedAtMicros), ...deadline });
  metrics.addMetric('AcceptedTraces', MetricUnit.Count, result.accepted);
  metrics.addMetric('RejectedTraces', MetricUnit.Count, result.rejected);
  logger.info('Batch ingested', { org_id: result.orgId, api_key_id: result.apiKeyId, accepted: result.accepted, rejected: result.rejected });
  return successResponse(result, requestId);
}

/** POST /otel/v1/traces: runs the OTLP use case, counts and logs what it accepted, answers in the export's encoding. */
async function serveExport(deps: IngestDeps, { logger, metrics }: Telemetry, event: GatewayEvent, requestId: string, receivedAtMicros: number, deadline: WorkDeadline) {
  const request = { ...toOtlpRequest(event, requestId, receivedAtMicros), ...deadline };
  const result = await ingestOtlp(deps, request);
  metrics.addMetric('AcceptedTraces', MetricUnit.Count, result.acceptedTraces);
  metrics.addMetric('AcceptedOtlpSpans', MetricUnit.Count, result.acceptedSpans);
  metrics.addMetric('RejectedOtlpSpans', MetricUnit.Count, result.rejectedSpans);
  logger.info('OTLP export ingested', { org_id: result.orgId, api_key_id: result.apiKeyId, spans: result.acceptedSpans, rejected_spans: result.rejectedSpans });
  return otlpSuccessResponse(result, request.format, requestId);
}

/** Logs and counts a refusal: a quota verdict, a dependency that failed, or a request the contract refuses. */
function recordRefusal({ logger, metrics }: Telemetry, error: unknown, response: APIGatewayProxyResult): void {
  if (error instanceof IngestError) logger.info('Request refused', { status: response.statusCode, code: error.code, ...(error.orgId ? { org_id: error.orgId } : {}) });
  else logger.error('Unexpected error; answered 503', { error: error as Error });
  if (response.statusCode === 429) metrics.addMetric('ThrottledRequests', MetricUnit.Count, 1);
  else if (response.statusCode >= 500) metrics.addMetric('UnavailableResponses', MetricUnit.Count, 1);
  else metrics.addMetric('RefusedRequests', MetricUnit.Count, 1);
}

/**
 * Aborted {@link DEADLINE_MARGIN_MS} before the function's timeout (read from `getRemainingTimeInMillis`,
 * https://docs.aws.amazon.com/lambda/latest/dg/nodejs-context.html), so the work still running stops reserving
 * and publishing and winds down while there is time to answer; `atMs` (epoch ms) is that moment, which no
 * Kinesis call is given time beyond. One controller per invocation, not middy's `signal`: middy 6 shares one
 * AbortController among the invocations of a module, harmless on Lambda (one invocation per environment) but not
 * where requests run side by side in one process (the local stack), where one request's deadline stopped the
 * others' publishing.
 */
function deadlineSignal(context: Context): { signal: AbortSignal; atMs: number | undefined; clear(): void } {
  const controller = new AbortController();
  if (typeof context.getRemainingTimeInMillis !== 'function') return { signal: controller.signal, atMs: undefined, clear: () => {} };
  const workMs = Math.max(0, context.getRemainingTimeInMillis() - DEADLINE_MARGIN_MS);
  const timer = setTimeout(() => controller.abort(), workMs);
  return { signal: controller.signal, atMs: Date.now() + workMs, clear: () => clearTimeout(timer) };
}

/** Builds the ingest Lambda handler: the middleware chain around {@link ingestBatch} and {@link ingestOtlp}. */
export function createIngestHandler(options: IngestHandlerOptions) {
  const { logger, metrics } = options;
  const nowMicros = options.nowMicros ?? defaultNowMicros;
  const deps: IngestDeps = {
    ...options.deps,
    logger: { warn: (message, extra) => logger.warn(message, extra), error: (message, extra) => logger.error(message, extra) },
    metrics: { count: (name, value) => metrics.addMetric(name, MetricUnit.Count, value) },
  };

  const ingest = async (event: GatewayEvent, context: Context): Promise<APIGatewayProxyResult> => {
    const started = performance.now();
    const deadline = deadlineSignal(context);
    const requestId = requestIdOf(event);
    logger.appendKeys({ request_id: requestId });
    const serve = isOtlpTracesEvent(event) ? serveExport : serveBatch;
    let response: APIGatewayProxyResult;
    try {
      response = await serve(deps, options, event, requestId, nowMicros(), { signal: deadline.signal, deadlineAtMs: deadline.atMs });
    } catch (error) {
      response = refusalResponse(error, event, requestId);
      recordRefusal(options, error, response);
    } finally {
      deadline.clear();
    }
    metrics.addMetric('IngestLatency', MetricUnit.Milliseconds, performance.now() - started);
    return response;
  };

  return middy<GatewayEvent, APIGatewayProxyResult, Error, Context>({
    // Half a second before the function's deadline, answer for ourselves rather than leave the client a
    // gateway 502/504, if the work did not wind down when told to. It may still be in flight, so the answer
    // cannot say nothing was accepted.
    timeoutEarlyInMillis: ANSWER_MARGIN_MS,
    timeoutEarlyResponse: () => {
      throw deadlineReached();
    },
  })
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(logMetrics(metrics))
    .use(httpErrorBoundary(logger))
    .handler(ingest);
}
