import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { gunzipSync, inflateSync } from 'node:zlib';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import {
  GATEWAY_INTEGRATION_TIMEOUT_MS,
  GATEWAY_MAX_PAYLOAD_BYTES,
  LAMBDA_SYNC_PAYLOAD_BYTES,
} from '../../lambda/shared/request-limits.js';
import { INGEST_ROUTE, ROUTES_SENTENCE } from '../../lambda/shared/service-constants.js';
import { BINARY_MEDIA_TYPES, type GatewayAnswer, type GatewayAnswerName, GATEWAY_ANSWERS, gatewayAnswerHeaders } from '../../lib/gateway-responses.js';
import { API_ROUTE_PATHS, restApiEvent } from '../lambda/lambda-events.js';

/**
 * What the gateway does with a `Content-Encoding: gzip` or `deflate` request. AWS documents that API
 * Gateway inflates it ("By default, API Gateway supports decompression of the method request payload",
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-gzip-compression-decompression.html;
 * "it attempts to decompress the payload with the specified content coding … If the specified coding
 * isn't supported or the supplied payload isn't compressed with specified coding, API Gateway returns
 * the 415", https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-make-request-with-compressed-payload.html)
 * but not whether the header reaches the function; serverless-http #194 reports it kept. The default
 * is that report; the other two are there so a test can show the function works under each.
 */
export type ContentEncodingBehaviour = 'inflate-keep-header' | 'inflate-drop-header' | 'pass-through';

/** The deployed behaviours the local gateway models, each configurable where the documentation leaves doubt. */
export interface GatewayBehaviour {
  contentEncoding: ContentEncodingBehaviour;
  /** Media types whose bodies arrive base64-encoded (the stack's `binaryMediaTypes`); others arrive as UTF-8 text. */
  binaryMediaTypes: readonly string[];
  /** Request payload limit on the wire: API Gateway's 10 MB. */
  maxPayloadBytes: number;
  /** Largest event JSON Lambda accepts for a synchronous invoke (6 MB). */
  invokePayloadBytes: number;
  /** How long the gateway waits for the function (29 s). */
  integrationTimeoutMs: number;
  /**
   * How an event over the invoke payload is answered. AWS documents neither: reports show API Gateway's
   * "Internal server error" 500 for a Lambda it could not invoke (https://repost.aws/knowledge-center/api-gateway-internal-server-error),
   * which the stack's API_CONFIGURATION_ERROR response shapes (`configuration-error`), and also a bare
   * 413 `{"message": "Request Too Long"}` that no gateway response shaped (`request-too-long`).
   */
  invokePayloadRefusal: 'configuration-error' | 'request-too-long';
}

/** The deployed API's behaviour, from the stack's settings and AWS's documented limits. */
export const DEPLOYED_GATEWAY: GatewayBehaviour = {
  contentEncoding: 'inflate-keep-header',
  binaryMediaTypes: BINARY_MEDIA_TYPES,
  maxPayloadBytes: GATEWAY_MAX_PAYLOAD_BYTES,
  invokePayloadBytes: LAMBDA_SYNC_PAYLOAD_BYTES,
  integrationTimeoutMs: GATEWAY_INTEGRATION_TIMEOUT_MS,
  invokePayloadRefusal: 'configuration-error',
};

/** Codings API Gateway decodes (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-enable-compression.html#api-gateway-supported-content-encodings). */
const GATEWAY_CODINGS = ['gzip', 'deflate', 'identity'] as const;

export type ProxyHandler = (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>;

export interface GatewayRequest {
  method: string;
  /** Whether the body goes into the event base64-encoded (a binary media type) or as UTF-8 text. */
  binary?: boolean;
  /** Path and query string as received, e.g. `/v1/traces/ingest?x=1`. */
  url: string;
  /** `IncomingMessage.rawHeaders`: names as sent, in order, repeated headers kept. */
  rawHeaders: string[];
  body: Buffer;
  sourceIp: string;
  protocol: string;
}

/** The REST (v1) proxy event the deployed API sends: a binary body base64-encoded, a text body as a string. */
export function toGatewayEvent(request: GatewayRequest, now: Date = new Date(), requestId: string = randomUUID()): APIGatewayProxyEvent {
  const headers: [string, string][] = [];
  for (let i = 0; i + 1 < request.rawHeaders.length; i += 2) headers.push([request.rawHeaders[i] as string, request.rawHeaders[i + 1] as string]);
  const url = new URL(request.url, 'http://localhost');
  return restApiEvent({
    method: request.method,
    path: routePath(request.url) ?? url.pathname,
    headers,
    body: request.body.length === 0 ? null : request.binary === false ? request.body.toString('utf8') : request.body,
    query: url.searchParams,
    requestId,
    sourceIp: request.sourceIp,
    protocol: request.protocol,
    now,
  });
}

/**
 * The path of an origin-form request target (`/v1/traces/ingest?x=1` → `/v1/traces/ingest`), exactly
 * as sent: API Gateway matches resources on the literal path, so a trailing slash, `//`, `/./`,
 * `/x/../`, percent-encoded letters, an absolute-form target or a `#fragment` name no resource.
 * Undefined for a target that is not origin-form.
 */
export function routePath(target: string): string | undefined {
  if (!target.startsWith('/')) return undefined;
  const end = target.indexOf('?');
  return end === -1 ? target : target.slice(0, end);
}

function writeJson(res: ServerResponse, status: number, requestId: string, body: Record<string, unknown>, headers: Record<string, string> = {}): void {
  const text = JSON.stringify({ ...body, request_id: requestId });
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Cache-Control': 'no-store',
    'Content-Length': Buffer.byteLength(text),
    'X-Request-Id': requestId,
    'x-amzn-RequestId': requestId,
    ...headers,
  });
  res.end(text);
}

/** One of the gateway's own answers, as the stack's gateway response for it renders (lib/gateway-responses.ts). */
function writeGatewayAnswer(res: ServerResponse, name: GatewayAnswerName, requestId: string, fallback: { status: number; message: string } = { status: 500, message: '' }): void {
  const answer: GatewayAnswer = GATEWAY_ANSWERS[name];
  writeJson(res, answer.status ?? fallback.status, requestId, { detail: answer.detail ?? fallback.message, code: answer.code }, gatewayAnswerHeaders(answer));
}

/** Writes a proxy result back the way API Gateway does (headers, multi-value headers, base64 bodies decoded). */
export function writeProxyResult(res: ServerResponse, result: APIGatewayProxyResult): void {
  const body = result.isBase64Encoded ? Buffer.from(result.body, 'base64') : Buffer.from(result.body ?? '', 'utf8');
  for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, String(value));
  for (const [name, values] of Object.entries(result.multiValueHeaders ?? {})) res.setHeader(name, values.map(String));
  res.setHeader('Content-Length', body.length);
  res.statusCode = result.statusCode;
  res.end(body);
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** Whether a Content-Type is one of the binary media types (`*∕*`, `type/*` or exact, parameters ignored). */
export function isBinaryMediaType(contentType: string | undefined, binaryMediaTypes: readonly string[]): boolean {
  const [type = '', subtype = ''] = (contentType ?? 'application/json').split(';')[0]?.trim().toLowerCase().split('/') ?? [];
  return binaryMediaTypes.some((pattern) => {
    const [patternType, patternSubtype] = pattern.toLowerCase().split('/');
    return (patternType === '*' || patternType === type) && (patternSubtype === '*' || patternSubtype === subtype);
  });
}

type Decoded = { body: Buffer; dropEncoding: boolean } | { refusal: 'unsupportedEncoding' | 'notDelivered' };

/**
 * The body as the gateway hands it on: inflated when it names a coding the gateway decodes (unless
 * the behaviour is pass-through), refused with 415 when the coding is unknown or the body is not in it.
 * Inflation stops past the invoke limit: a body that large could not be delivered anyway.
 */
function gatewayDecodedBody(body: Buffer, contentEncoding: string | undefined, behaviour: GatewayBehaviour): Decoded {
  const coding = contentEncoding?.trim().toLowerCase() ?? '';
  if (behaviour.contentEncoding === 'pass-through' || coding === '' || coding === 'identity') return { body, dropEncoding: false };
  if (!(GATEWAY_CODINGS as readonly string[]).includes(coding)) return { refusal: 'unsupportedEncoding' };
  try {
    const options = { maxOutputLength: behaviour.invokePayloadBytes + 1 };
    const inflated = coding === 'gzip' ? gunzipSync(body, options) : inflateSync(body, options);
    return { body: inflated, dropEncoding: behaviour.contentEncoding === 'inflate-drop-header' };
  } catch (error) {
    return { refusal: (error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' ? 'notDelivered' : 'unsupportedEncoding' };
  }
}

/** Header pairs of `rawHeaders`, without `Content-Encoding` when the gateway dropped it. */
function forwardedHeaders(rawHeaders: string[], dropEncoding: boolean): string[] {
  const kept: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (dropEncoding && (rawHeaders[i] as string).toLowerCase() === 'content-encoding') continue;
    kept.push(rawHeaders[i] as string, rawHeaders[i + 1] as string);
  }
  return kept;
}

/** Settles with the handler's result, or with `undefined` once `timeoutMs` has passed. */
async function withinTimeout<T>(work: Promise<T>, timeoutMs: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), timeoutMs);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function isProxyResult(result: unknown): result is APIGatewayProxyResult {
  return typeof result === 'object' && result !== null && Number.isInteger((result as { statusCode?: unknown }).statusCode);
}

export interface GatewayOptions {
  handler: ProxyHandler;
  port: number;
  host?: string;
  /** Called when the handler throws (the deployed API would answer 502). */
  onError?: (error: unknown) => void;
  /** Deviations from {@link DEPLOYED_GATEWAY}. */
  behaviour?: Partial<GatewayBehaviour>;
}

/** An HTTP server that plays API Gateway in front of the ingest handler. */
export interface HttpGateway {
  url: string;
  server: Server;
  stop(): Promise<void>;
}

/**
 * Serves `POST /v1/traces/ingest` and `POST /otel/v1/traces` through `handler` the way the deployed
 * REST API does, answering what it answers itself from the stack's gateway responses: 404 for an
 * unknown path or method, 401 without `X-API-Key` on the JSON route, 413 over 10 MB, 415 for a
 * Content-Encoding it cannot decode, 500 for an event over Lambda's 6 MB invoke payload, 504 after
 * 29 s, 502 when the function fails or answers something that is not a proxy result.
 */
export function createGatewayListener(options: Pick<GatewayOptions, 'handler' | 'onError' | 'behaviour'>) {
  const behaviour: GatewayBehaviour = { ...DEPLOYED_GATEWAY, ...options.behaviour };
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const requestId = randomUUID();
    try {
      if (req.httpVersion === '1.1' && req.headers.host === undefined) {
        req.resume();
        res.setHeader('Connection', 'close');
        return writeJson(res, 400, requestId, { detail: 'Malformed request: an HTTP/1.1 request must carry a Host header.', code: 'malformed_request' });
      }
      const pathname = routePath(req.url ?? '');
      if (pathname === undefined || !API_ROUTE_PATHS.includes(pathname) || req.method !== INGEST_ROUTE.method) {
        req.resume();
        return writeGatewayAnswer(res, 'missingRoute', requestId);
      }
      // The OTLP route answers a missing key itself, with a google.rpc.Status body exporters read.
      if (pathname === INGEST_ROUTE.path && req.headers['x-api-key'] === undefined) {
        req.resume();
        return writeGatewayAnswer(res, 'missingApiKey', requestId);
      }
      const wire = await readBody(req, behaviour.maxPayloadBytes);
      if (wire === undefined) {
        res.setHeader('Connection', 'close');
        return writeGatewayAnswer(res, 'requestTooLarge', requestId);
      }
      const decoded = gatewayDecodedBody(wire, req.headers['content-encoding'], behaviour);
      if ('refusal' in decoded) return writeGatewayAnswer(res, decoded.refusal, requestId);
      const event = toGatewayEvent(
        {
          method: req.method,
          url: req.url ?? '/',
          rawHeaders: forwardedHeaders(req.rawHeaders, decoded.dropEncoding),
          body: decoded.body,
          binary: isBinaryMediaType(req.headers['content-type'], behaviour.binaryMediaTypes),
          sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
          protocol: `HTTP/${req.httpVersion}`,
        },
        new Date(),
        requestId,
      );
      if (Buffer.byteLength(JSON.stringify(event)) > behaviour.invokePayloadBytes) {
        if (behaviour.invokePayloadRefusal === 'configuration-error') return writeGatewayAnswer(res, 'notDelivered', requestId);
        const text = '{"message": "Request Too Long"}';
        res.writeHead(413, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), 'x-amzn-RequestId': requestId, 'x-amzn-ErrorType': 'BadRequestException' });
        return void res.end(text);
      }
      const invocation = Promise.resolve().then(() => options.handler(event));
      const result = await withinTimeout(invocation, behaviour.integrationTimeoutMs);
      if (result === undefined) {
        invocation.catch((error: unknown) => options.onError?.(error));
        return writeGatewayAnswer(res, 'integrationTimeout', requestId);
      }
      if (!isProxyResult(result)) throw new Error('The function answered something that is not a proxy result');
      writeProxyResult(res, result);
    } catch (error) {
      options.onError?.(error);
      try {
        if (!res.headersSent) writeGatewayAnswer(res, 'default5xx', requestId, { status: 502, message: 'Internal server error' });
        else res.destroy();
      } catch {
        res.destroy();
      }
    }
  };
}

/**
 * Answers an `Expect` other than `100-continue` as API Gateway's front door would refuse it, in the
 * API's JSON shape, instead of Node's bare 417.
 */
function answerExpectation(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  res.setHeader('Connection', 'close');
  writeJson(res, 417, randomUUID(), { detail: `Expectation failed: only "Expect: 100-continue" is understood, not "${String(req.headers.expect)}".`, code: 'expectation_failed' });
}

/** Status and `detail` for a request Node's HTTP parser refused before any listener saw it. */
function clientErrorAnswer(error: NodeJS.ErrnoException): { status: number; reason: string; detail: string; code: string } {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, reason: 'Request Header Fields Too Large', detail: 'Request headers too large: send at most 16 KB of headers.', code: 'headers_too_large' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return { status: 408, reason: 'Request Timeout', detail: 'Request timeout: the request was not received in time.', code: 'request_timeout' };
    case 'HPE_INVALID_METHOD':
      return {
        status: 400,
        reason: 'Bad Request',
        detail: `Malformed request: unknown HTTP method. ${ROUTES_SENTENCE}`,
        code: 'malformed_request',
      };
    default:
      return { status: 400, reason: 'Bad Request', detail: 'Malformed request: the HTTP request line or headers could not be parsed.', code: 'malformed_request' };
  }
}

/**
 * Answers a request the HTTP parser refused (headers over 16 KB, duplicate Content-Length, an
 * unknown method, a broken request line) with the same JSON and `X-Request-Id` as every other
 * answer, then closes the connection: after a parse error its bytes cannot be trusted.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable || (error.code === 'ECONNRESET' && socket.destroyed)) {
    socket.destroy();
    return;
  }
  const requestId = randomUUID();
  const { status, reason, detail, code } = clientErrorAnswer(error);
  const text = JSON.stringify({ detail, code, request_id: requestId });
  const head = [
    `HTTP/1.1 ${status} ${reason}`,
    'Content-Type: application/json',
    'Cache-Control: no-store',
    `Content-Length: ${Buffer.byteLength(text)}`,
    `X-Request-Id: ${requestId}`,
    'Connection: close',
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${text}`);
}

export async function startHttpGateway(options: GatewayOptions): Promise<HttpGateway> {
  const listener = createGatewayListener(options);
  // requireHostHeader: false lets the listener answer a missing Host in JSON instead of Node's bare 400.
  const server = createServer({ requireHostHeader: false }, (req, res) => void listener(req, res));
  server.on('clientError', answerClientError);
  server.on('checkExpectation', answerExpectation);
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let stopping: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    server,
    stop: () =>
      (stopping ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 2_000).unref();
      })),
  };
}
