import type { APIGatewayProxyResult } from 'aws-lambda';
import { OTLP_ROUTE } from '../../shared/service-constants.js';
import { type GatewayEvent, asRefusal, headerValues, rawBodyOf, refusalHeaders } from '../http/gateway.js';
import { rateLimitHeaders } from '../core/rate/quota-headers.js';
import type { OtlpFormat, OtlpRequest, OtlpResult } from './ingest-otlp.js';
import { exportResponseJson } from './otlp-json.js';
import { encodeExportResponse, encodeStatus } from './protobuf/encode-export-response.js';


/** True for a request to the OTLP route (REST API events carry the path without the stage). */
export function isOtlpTracesEvent(event: GatewayEvent): boolean {
  const path = 'rawPath' in event ? event.rawPath : event.path;
  return typeof path === 'string' && path.replace(/\/+$/, '').endsWith(OTLP_ROUTE.path);
}

/** The OTLP encoding named by the `Content-Type` (parameters ignored), if it names one. */
export function otlpFormatOf(event: GatewayEvent): OtlpFormat | undefined {
  const [type] = headerValues(event, 'content-type');
  const mediaType = type?.split(';')[0]?.trim().toLowerCase();
  if (mediaType === 'application/x-protobuf' || mediaType === 'application/protobuf') return 'protobuf';
  if (mediaType === 'application/json') return 'json';
  return undefined;
}

export function toOtlpRequest(event: GatewayEvent, requestId: string, receivedAtMicros: number): OtlpRequest {
  return {
    requestId,
    receivedAtMicros,
    apiKeyValues: headerValues(event, 'x-api-key'),
    workspaceSlugValues: headerValues(event, 'x-workspace-slug'),
    format: otlpFormatOf(event),
    body: rawBodyOf(event),
  };
}

/** google.rpc.Code of each HTTP status the endpoint answers with. */
const RPC_CODE: Record<number, number> = { 400: 3, 401: 16, 402: 9, 403: 7, 409: 10, 413: 8, 415: 3, 422: 3, 429: 8, 503: 14 };
const RPC_UNAVAILABLE = 14;

function respond(status: number, format: OtlpFormat | undefined, requestId: string, json: string, binary: Uint8Array, extra: Record<string, string> = {}): APIGatewayProxyResult {
  const headers = { 'Cache-Control': 'no-store', 'X-Request-Id': requestId, ...extra };
  if (format === 'protobuf') {
    return { statusCode: status, headers: { 'Content-Type': 'application/x-protobuf', ...headers }, body: Buffer.from(binary).toString('base64'), isBase64Encoded: true };
  }
  return { statusCode: status, headers: { 'Content-Type': 'application/json', ...headers }, body: json };
}

/** 200 with an `ExportTraceServiceResponse` in the request's encoding; `partial_success` when spans were rejected. */
export function otlpSuccessResponse(result: OtlpResult, format: OtlpFormat | undefined, requestId: string): APIGatewayProxyResult {
  return respond(
    200,
    format,
    requestId,
    exportResponseJson(result.rejectedSpans, result.errorMessage),
    format === 'protobuf' ? encodeExportResponse(result.rejectedSpans, result.errorMessage) : new Uint8Array(0),
    rateLimitHeaders(result.quotaState),
  );
}

/**
 * A refusal as OTLP/HTTP says: the status of the JSON endpoint, a `google.rpc.Status` body in the
 * request's encoding (JSON when the encoding is unknown), and `Retry-After` on 429 and 503, which
 * exporters retry. Anything that is not an `IngestError` becomes a 503.
 */
export function otlpErrorResponse(error: unknown, format: OtlpFormat | undefined, requestId: string): APIGatewayProxyResult {
  const refusal = asRefusal(error, 'retry the export');
  const code = RPC_CODE[refusal.status] ?? RPC_UNAVAILABLE;
  return respond(
    refusal.status,
    format,
    requestId,
    JSON.stringify({ code, message: refusal.message, details: [] }),
    format === 'protobuf' ? encodeStatus(code, refusal.message) : new Uint8Array(0),
    refusalHeaders(refusal),
  );
}
