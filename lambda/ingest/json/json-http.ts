import type { APIGatewayProxyResult } from 'aws-lambda';
import type { IngestResult } from '../core/ingest-types.js';
import { rateLimitHeaders } from '../core/rate/quota-headers.js';
import { asRefusal, type GatewayEvent, headerValues, rawBodyOf, refusalHeaders } from '../http/gateway.js';
import type { IngestRequest } from './ingest-batch.js';

export function toIngestRequest(event: GatewayEvent, requestId: string, receivedAtMicros: number): IngestRequest {
  return {
    requestId,
    apiKeyValues: headerValues(event, 'x-api-key'),
    idempotencyKeyValues: headerValues(event, 'idempotency-key'),
    body: rawBodyOf(event),
    receivedAtMicros,
  };
}

function json(status: number, requestId: string, body: unknown, extraHeaders: Record<string, string> = {}): APIGatewayProxyResult {
  return {
    statusCode: status,
    headers: {
      'Content-Type': 'application/json',
      'Cache-Control': 'no-store',
      'X-Request-Id': requestId,
      ...extraHeaders,
    },
    body: JSON.stringify(body),
  };
}

export function successResponse(result: IngestResult, requestId: string): APIGatewayProxyResult {
  return json(
    200,
    requestId,
    { accepted: result.accepted, rejected: result.rejected, errors: result.errors },
    { ...rateLimitHeaders(result.quotaState), ...(result.replayed ? { 'Idempotent-Replayed': 'true' } : {}) },
  );
}

/**
 * The one place that writes a refusal: status, code and `Retry-After` come from the error itself.
 * Anything that is not an {@link IngestError} becomes a 503 that leaks nothing.
 */
export function errorResponse(error: unknown, requestId: string): APIGatewayProxyResult {
  const refusal = asRefusal(error, 'retry the whole batch');
  return json(refusal.status, requestId, { detail: refusal.message, code: refusal.code, ...refusal.bodyFields(), request_id: requestId }, refusalHeaders(refusal));
}

