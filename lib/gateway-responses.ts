import { MAX_DECODED_BODY_BYTES, SPLIT_THE_BATCH } from '../lambda/shared/request-limits.js';
import { ROUTES_SENTENCE } from '../lambda/shared/service-constants.js';

/**
 * Every request body reaches the function base64-encoded, whatever its Content-Type: its size in the
 * event is exactly 4/3 of its decoded size, the shape `MAX_DECODED_BODY_BYTES` is derived for (as text,
 * JSON escaping could double it). A gzip or deflate body is inflated by API Gateway first, which keeps the
 * Content-Encoding header ("By default, API Gateway supports decompression of the method request
 * payload", https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-gzip-compression-decompression.html);
 * the function reads a body in either state (lambda/ingest/http/decode-body.ts).
 */
export const BINARY_MEDIA_TYPES: readonly string[] = ['*/*'];

/**
 * The answers API Gateway gives itself, before or instead of the function, in the API's JSON error
 * shape. The stack turns each into an `AWS::ApiGateway::GatewayResponse` (lib/constructs/ingest-api.ts)
 * and the local gateway (devkit/local-stack/http-gateway.ts) answers from the same records, so the two
 * cannot drift. Types and default statuses: https://docs.aws.amazon.com/apigateway/latest/developerguide/supported-gateway-response-types.html
 */
export interface GatewayAnswer {
  /** The gateway response type it customizes. */
  readonly type: string;
  /** The status it answers with; undefined keeps the status of the error it stands for (DEFAULT_4XX, DEFAULT_5XX). */
  readonly status: number | undefined;
  readonly code: string;
  /** `detail` of the body; undefined puts API Gateway's own message there (`$context.error.messageString`). */
  readonly detail: string | undefined;
  /** `Retry-After` seconds where resending the same request can succeed; never on an answer that says to split. */
  readonly retryAfterSeconds?: number;
}

/** Headers on every gateway answer. Gateway responses can only set static values or copy request parameters (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-swagger-extensions-gateway-responses.responseParameters.html), so `X-Request-Id` cannot be one of them: the body's `request_id` and API Gateway's own `x-amzn-RequestId` carry the id. */
export const GATEWAY_ANSWER_HEADERS = { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' } as const;

const notFound = `No route for this method and path. ${ROUTES_SENTENCE}`;

export const GATEWAY_ANSWERS = {
  /** An unknown path, or another method on a known one: API Gateway's "Missing Authentication Token" 403 made an honest 404. */
  missingRoute: { type: 'MISSING_AUTHENTICATION_TOKEN', status: 404, code: 'not_found', detail: notFound },
  resourceNotFound: { type: 'RESOURCE_NOT_FOUND', status: 404, code: 'not_found', detail: notFound },
  /** The JSON route's required `X-API-Key` header is missing (the request validator). */
  missingApiKey: { type: 'BAD_REQUEST_PARAMETERS', status: 401, code: 'invalid_api_key', detail: 'Invalid or missing API key: send it in the X-API-Key header.' },
  /** Over API Gateway's 10 MB request payload, counted on the wire. */
  requestTooLarge: {
    type: 'REQUEST_TOO_LARGE',
    status: 413,
    code: 'payload_too_large',
    detail: `Request body too large: API Gateway accepts at most 10 MB on the wire and the API at most ${MAX_DECODED_BODY_BYTES} bytes decoded; ${SPLIT_THE_BATCH}.`,
  },
  /** A Content-Encoding API Gateway cannot decode, or a body not in the coding it names (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-make-request-with-compressed-payload.html). */
  unsupportedEncoding: {
    type: 'UNSUPPORTED_MEDIA_TYPE',
    status: 415,
    code: 'unsupported_content_encoding',
    detail: 'Unsupported Content-Encoding: the gateway decodes gzip and deflate, and the body must be in the coding the header names; send gzip or no Content-Encoding.',
  },
  /**
   * The gateway could not invoke the function. On this API that is, above all, an event over Lambda's
   * 6 MB invoke payload: a body over the ceiling that Lambda refuses before the function can answer
   * 413. Lambda throttling lands here too (https://repost.aws/knowledge-center/api-gateway-internal-server-error),
   * so the status stays 500 (OTLP exporters do not retry it) and there is no `Retry-After`.
   */
  notDelivered: {
    type: 'API_CONFIGURATION_ERROR',
    status: 500,
    code: 'request_not_delivered',
    detail:
      `Request not delivered to the ingest function; nothing was accepted. A body over ${MAX_DECODED_BODY_BYTES} bytes decoded cannot be delivered: ` +
      `${SPLIT_THE_BATCH}. A smaller batch answered this may be resent after a few seconds.`,
  },
  /** The function did not answer within the 29 s integration timeout (it stops itself at 25 s, so this is rare). */
  integrationTimeout: {
    type: 'INTEGRATION_TIMEOUT',
    status: 504,
    code: 'gateway_timeout',
    detail: 'Gateway timeout: the ingest function did not answer in time; part of the batch may have been accepted; resend it with the same Idempotency-Key after the Retry-After delay.',
    retryAfterSeconds: 5,
  },
  throttled: { type: 'THROTTLED', status: 429, code: 'rate_limited', detail: 'Rate limit exceeded: the API is throttling requests; retry after the Retry-After delay.', retryAfterSeconds: 1 },
  /** Any other 4xx keeps its status and API Gateway's message. */
  default4xx: { type: 'DEFAULT_4XX', status: undefined, code: 'bad_request', detail: undefined },
  /** Any other 5xx (a function that crashed or answered something that is not a proxy result: 502) keeps its status. */
  default5xx: {
    type: 'DEFAULT_5XX',
    status: undefined,
    code: 'unavailable',
    detail: 'Service temporarily unavailable: retry the whole batch with the same Idempotency-Key after the Retry-After delay.',
    retryAfterSeconds: 5,
  },
} as const satisfies Record<string, GatewayAnswer>;

export type GatewayAnswerName = keyof typeof GATEWAY_ANSWERS;

/** The mapping template of an answer: `$context.requestId` and, for the defaults, `$context.error.messageString` filled in by API Gateway. */
export function gatewayAnswerTemplate(answer: GatewayAnswer): string {
  const detail = answer.detail === undefined ? '$context.error.messageString' : JSON.stringify(answer.detail);
  return `{"detail":${detail},"code":${JSON.stringify(answer.code)},"request_id":"$context.requestId"}`;
}

/** The headers of an answer as the gateway sends them. */
export function gatewayAnswerHeaders(answer: GatewayAnswer): Record<string, string> {
  return { ...GATEWAY_ANSWER_HEADERS, ...(answer.retryAfterSeconds === undefined ? {} : { 'Retry-After': String(answer.retryAfterSeconds) }) };
}
