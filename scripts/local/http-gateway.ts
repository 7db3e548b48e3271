import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { INGEST_ROUTE, ROUTES_SENTENCE } from '../../lambda/shared/service-constants.js';
import { API_ROUTE_PATHS, restApiEvent } from './lambda-events.js';

/** API Gateway's own payload limit; larger requests never reach the function. */
export const GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024;

export type ProxyHandler = (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>;

export interface GatewayRequest {
  method: string;
  /** Path and query string as received, e.g. `/v1/traces/ingest?x=1`. */
  url: string;
  /** `IncomingMessage.rawHeaders`: names as sent, in order, repeated headers kept. */
  rawHeaders: string[];
  body: Buffer;
  sourceIp: string;
  protocol: string;
}

/**
 * The REST (v1) proxy event the deployed API sends. Its binary media types match every type, so any
 * body reaches the function base64-encoded, exactly as sent (a gzip body still compressed).
 */
export function toGatewayEvent(request: GatewayRequest, now: Date = new Date(), requestId: string = randomUUID()): APIGatewayProxyEvent {
  const headers: [string, string][] = [];
  for (let i = 0; i + 1 < request.rawHeaders.length; i += 2) headers.push([request.rawHeaders[i] as string, request.rawHeaders[i + 1] as string]);
  const url = new URL(request.url, 'http://localhost');
  return restApiEvent({
    method: request.method,
    path: routePath(request.url) ?? url.pathname,
    headers,
    body: request.body.length > 0 ? request.body : null,
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
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), 'X-Request-Id': requestId, ...headers });
  res.end(text);
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

export interface GatewayOptions {
  handler: ProxyHandler;
  port: number;
  host?: string;
  /** Called when the handler throws (the deployed API would answer 502). */
  onError?: (error: unknown) => void;
}

/** An HTTP server that plays API Gateway in front of the ingest handler. */
export interface HttpGateway {
  url: string;
  server: Server;
  stop(): Promise<void>;
}

/**
 * Serves `POST /v1/traces/ingest` and `POST /otel/v1/traces` through `handler`; the other answers
 * mirror the deployed API's gateway responses (JSON 404 for unknown paths, 401 without `X-API-Key`
 * on the JSON route, 413 over 10 MB), plus 405 for another method on either path.
 */
export function createGatewayListener(options: Pick<GatewayOptions, 'handler' | 'onError'>) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const requestId = randomUUID();
    try {
      const pathname = routePath(req.url ?? '');
      if (pathname === undefined || !API_ROUTE_PATHS.includes(pathname)) {
        req.resume();
        return writeJson(res, 404, requestId, {
          detail: `No route for this method and path. ${ROUTES_SENTENCE}`,
          code: 'not_found',
        });
      }
      if (req.method !== INGEST_ROUTE.method) {
        req.resume();
        return writeJson(
          res,
          405,
          requestId,
          { detail: `Method ${req.method} not allowed. ${ROUTES_SENTENCE}`, code: 'method_not_allowed' },
          { Allow: INGEST_ROUTE.method },
        );
      }
      // The OTLP route answers a missing key itself, with a google.rpc.Status body exporters read.
      if (pathname === INGEST_ROUTE.path && req.headers['x-api-key'] === undefined) {
        req.resume();
        return writeJson(res, 401, requestId, { detail: 'Invalid or missing API key: send it in the X-API-Key header.', code: 'invalid_api_key' });
      }
      const body = await readBody(req, GATEWAY_MAX_BODY_BYTES);
      if (body === undefined) {
        res.setHeader('Connection', 'close');
        return writeJson(res, 413, requestId, {
          detail: 'Request body too large: API Gateway accepts at most 10 MB; send the batch gzip-compressed or split it.',
          code: 'payload_too_large',
        });
      }
      const event = toGatewayEvent(
        {
          method: req.method,
          url: req.url ?? '/',
          rawHeaders: req.rawHeaders,
          body,
          sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
          protocol: `HTTP/${req.httpVersion}`,
        },
        new Date(),
        requestId,
      );
      writeProxyResult(res, await options.handler(event));
    } catch (error) {
      options.onError?.(error);
      try {
        if (!res.headersSent) writeJson(res, 502, requestId, { detail: 'Internal server error', code: 'bad_gateway' });
        else res.destroy();
      } catch {
        res.destroy();
      }
    }
  };
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
    `Content-Length: ${Buffer.byteLength(text)}`,
    `X-Request-Id: ${requestId}`,
    'Connection: close',
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${text}`);
}

export async function startHttpGateway(options: GatewayOptions): Promise<HttpGateway> {
  const listener = createGatewayListener(options);
  const server = createServer((req, res) => void listener(req, res));
  server.on('clientError', answerClientError);
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
