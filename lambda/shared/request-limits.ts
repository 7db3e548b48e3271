/**
 * The platform limits a request meets on its way to the ingest function, each with the AWS page
 * that states it, and the one request-size ceiling derived from them. The stack (lib/), the ingest
 * function, the local gateway and the client SDKs all read the ceiling from here.
 */

/**
 * Lambda's synchronous invoke payload limit, the whole event JSON included. "For synchronous
 * invocations, the maximum payload size is 6 MB" (https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html,
 * https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html); Lambda's own refusal
 * reads "Request must be smaller than 6291456 bytes for the InvokeFunction operation".
 */
export const LAMBDA_SYNC_PAYLOAD_BYTES = 6_291_456;

/**
 * API Gateway's REST API request payload limit, "10 MB" in
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html; its refusal reads
 * "HTTP content length exceeded 10485760 bytes". It counts the bytes on the wire (a gzip body compressed).
 */
export const GATEWAY_MAX_PAYLOAD_BYTES = 10_485_760;

/**
 * API Gateway's limit on the request line and headers together ("Total combined size of request line
 * and header values: 10240 bytes", https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html).
 * In a REST proxy event every header is there twice (`headers` and `multiValueHeaders`).
 */
export const GATEWAY_MAX_HEADER_BYTES = 10_240;

/**
 * API Gateway's default integration timeout, 50 ms to 29 s
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html): a function still
 * running then is answered 504 by the gateway.
 */
export const GATEWAY_INTEGRATION_TIMEOUT_MS = 29_000;

/**
 * The request-size ceiling: the most DECODED (base64 undone, gzip inflated) body bytes one request
 * may carry, on the JSON and the OTLP route, locally and deployed. Derived, not chosen: with
 * `binaryMediaTypes: ['*∕*']` API Gateway base64-encodes every body into the event (4/3), after
 * inflating a gzip body itself ("By default, API Gateway supports decompression of the method
 * request payload", https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-gzip-compression-decompression.html),
 * so a decoded body of `b` bytes makes an event of `4⌈b/3⌉` plus headers (twice) and the request
 * context. 4 MiB gives 5,592,408 bytes of body; with 2 × 10,240 bytes of headers and the envelope the
 * event is 5,614,652 bytes, 676,804 under Lambda's 6,291,456 (`npm run bench -- event-size`; pinned by
 * test/unit/shared/request-limits.test.ts).
 * A body over it gets 413 `batch_too_large` from the function when it reaches it; a body whose event
 * Lambda refuses never does (docs/deploy.md, "One ceiling").
 */
export const MAX_DECODED_BODY_BYTES = 4 * 1024 * 1024;

/** Bytes of the base64 text of `bytes` bytes, as the gateway puts a binary body into the event. */
export function base64Length(bytes: number): number {
  return 4 * Math.ceil(bytes / 3);
}

/** The sentence every size refusal ends with: resending cannot help, splitting does. */
export const SPLIT_THE_BATCH = `split the batch into requests of at most ${MAX_DECODED_BODY_BYTES} bytes decoded (4 MiB); resending it unchanged cannot succeed`;
