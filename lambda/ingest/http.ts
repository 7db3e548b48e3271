import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEvent, APIGatewayProxyEventV2, APIGatewayProxyResult } from 'aws-lambda';
import { IdempotencyInProgressError, IngestError, RateLimitedError, UnavailableError } from './errors.js';
import type { IngestRequest, IngestResult } from './ingest-batch.js';

/** The one place that maps ingest outcomes to HTTP statuses and bodies (decisions §1). */
export const STATUS_BY_CODE: Record<string, number> = {
  invalid_api_key: 401,
  no_active_plan: 403,
  payment_required: 402,
  payload_too_large: 413,
  malformed_body: 400,
  workspace_required: 400,
  workspace_out_of_scope: 403,
  rate_limited: 429,
  unavailable: 503,
  invalid_idempotency_key: 400,
  idempotency_key_reused: 422,
  idempotency_in_progress: 409,
};

export type GatewayEvent = APIGatewayProxyEvent | APIGatewayProxyEventV2;

/** All values of a header, case-insensitively, from a REST (v1) or HTTP API (v2) event. */
export function headerValues(event: GatewayEvent, name: string): string[] {
  const wanted = name.toLowerCase();
  const values: string[] = [];
  const multi = 'multiValueHeaders' in event ? event.multiValueHeaders : undefined;
  if (multi) {
    for (const [key, list] of Object.entries(multi)) {
      if (key.toLowerCase() === wanted && Array.isArray(list)) values.push(...list.filter((v): v is string => typeof v === 'string'));
    }
    if (values.length > 0) return values;
  }
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() !== wanted || typeof value !== 'string') continue;
    // HTTP API joins repeated headers with commas; keys and encodings never contain one.
    values.push(...('multiValueHeaders' in event ? [value] : value.split(',')));
  }
  return values;
}

export function requestIdOf(event: GatewayEvent): string {
  const id = (event.requestContext as { requestId?: unknown } | undefined)?.requestId;
  return typeof id === 'string' && id !== '' ? id : randomUUID();
}

export function toIngestRequest(event: GatewayEvent, requestId: string, receivedAtMicros: number): IngestRequest {
  const encodings = headerValues(event, 'content-encoding');
  return {
    requestId,
    apiKeyValues: headerValues(event, 'x-api-key'),
    idempotencyKeyValues: headerValues(event, 'idempotency-key'),
    body: {
      body: typeof event.body === 'string' ? event.body : null,
      isBase64Encoded: event.isBase64Encoded === true,
      contentEncoding: encodings.length > 0 ? encodings.join(',') : undefined,
    },
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
    result.replayed ? { 'Idempotent-Replayed': 'true' } : {},
  );
}

/** Maps a refusal to its response; anything unexpected becomes a 503 that leaks nothing. */
export function errorResponse(error: unknown, requestId: string): APIGatewayProxyResult {
  if (error instanceof RateLimitedError) {
    return json(
      429,
      requestId,
      { detail: error.message, code: error.code, window: error.window, limit: error.limit, request_id: requestId },
      { 'Retry-After': String(error.retryAfterSeconds) },
    );
  }
  if (error instanceof IdempotencyInProgressError) {
    return json(409, requestId, { detail: error.message, code: error.code, request_id: requestId }, { 'Retry-After': String(error.retryAfterSeconds) });
  }
  if (error instanceof UnavailableError) {
    return json(503, requestId, { detail: error.message, code: error.code, request_id: requestId }, { 'Retry-After': String(error.retryAfterSeconds) });
  }
  if (error instanceof IngestError) {
    return json(STATUS_BY_CODE[error.code] ?? 400, requestId, { detail: error.message, code: error.code, request_id: requestId });
  }
  return json(
    503,
    requestId,
    {
      detail: 'Service temporarily unavailable: an unexpected error occurred; nothing was accepted, retry the whole batch',
      code: 'unavailable',
      request_id: requestId,
    },
    { 'Retry-After': '5' },
  );
}
