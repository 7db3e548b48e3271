import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEvent, APIGatewayProxyEventV2 } from 'aws-lambda';
import { IngestError, UnavailableError } from '../core/errors.js';
import { rateLimitHeaders } from '../core/rate/quota-headers.js';
import type { RawBody } from './decode-body.js';

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

/** The body as API Gateway delivered it, with every `Content-Encoding` value: what either route decodes. */
export function rawBodyOf(event: GatewayEvent): RawBody {
  const encodings = headerValues(event, 'content-encoding');
  return {
    body: typeof event.body === 'string' ? event.body : null,
    isBase64Encoded: event.isBase64Encoded === true,
    contentEncoding: encodings.length > 0 ? encodings.join(',') : undefined,
  };
}

/** The error as a refusal to answer with: an {@link IngestError} as it is, anything else a 503 that leaks nothing. */
export function asRefusal(error: unknown, retryHint: string): IngestError {
  return error instanceof IngestError ? error : new UnavailableError(`Service temporarily unavailable: an unexpected error occurred; nothing was accepted, ${retryHint}`);
}

/** `Retry-After` and, on a 429, the quota headers: what every refusal adds to its status and body. */
export function refusalHeaders(refusal: IngestError): Record<string, string> {
  return { ...retryAfterHeader(refusal), ...rateLimitHeaders(refusal.quotaState) };
}

/** `Retry-After` for a refusal that says when to retry. */
export function retryAfterHeader(refusal: IngestError): Record<string, string> {
  return refusal.retryAfterSeconds === undefined ? {} : { 'Retry-After': String(refusal.retryAfterSeconds) };
}
