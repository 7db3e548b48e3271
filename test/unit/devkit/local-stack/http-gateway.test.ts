import { connect } from 'node:net';
import { deflateSync, gunzipSync, gzipSync } from 'node:zlib';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { type GatewayBehaviour, type HttpGateway, type ProxyHandler, routePath, startHttpGateway } from '../../../../devkit/local-stack/http-gateway.js';

/** What came back on a raw socket: the status line, the headers by lower-case name, the body. */
interface RawAnswer {
  status: number | undefined;
  headers: Record<string, string>;
  body: string;
}

function parseAnswer(text: string): RawAnswer {
  const split = text.indexOf('\r\n\r\n');
  const head = split === -1 ? text : text.slice(0, split);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1];
  return { status: status === undefined ? undefined : Number(status), headers, body: split === -1 ? '' : text.slice(split + 4) };
}

/** Sends raw bytes and reads until the server closes the connection (or a short idle timeout). */
function sendRaw(url: string, bytes: string | Buffer): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    const finish = () => {
      socket.destroy();
      resolve(parseAnswer(Buffer.concat(chunks).toString('latin1')));
    };
    socket.setTimeout(1_500, finish);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', finish);
    socket.on('close', finish);
    socket.end(bytes);
  });
}

let gateway: HttpGateway;
const events: APIGatewayProxyEvent[] = [];

beforeAll(async () => {
  gateway = await startHttpGateway({
    port: 0,
    handler: async (event) => {
      events.push(event);
      return { statusCode: 200, headers: { 'Content-Type': 'application/json', 'X-Request-Id': event.requestContext.requestId }, body: '{"accepted":0}' };
    },
  });
});
afterAll(() => gateway.stop());
beforeEach(() => events.splice(0));

const ingestRequest = (target: string) => `POST ${target} HTTP/1.1\r\nHost: x\r\nX-API-Key: k\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`;

function expectJsonAnswer(answer: RawAnswer, status: number, code?: string): void {
  expect(answer.status).toBe(status);
  expect(answer.headers['content-type']).toBe('application/json');
  expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  const body = JSON.parse(answer.body) as Record<string, unknown>;
  if (status !== 200) expect(body).toMatchObject({ detail: expect.any(String), request_id: answer.headers['x-request-id'] });
  if (code) expect(body.code).toBe(code);
}

describe('local HTTP gateway: any bytes (issue 14)', () => {
  it('survives an absolute-form target with an empty host, which once made new URL() throw outside any try', async () => {
    expectJsonAnswer(await sendRaw(gateway.url, 'GET http:// HTTP/1.1\r\nHost: x\r\n\r\n'), 404, 'not_found');
    expectJsonAnswer(await sendRaw(gateway.url, ingestRequest('/v1/traces/ingest')), 200);
  });

  it.each([
    '/v1/traces/ingest/',
    '//v1/traces/ingest',
    '/v1//traces/ingest',
    '/v1/./traces/ingest',
    '/v1/x/../traces/ingest',
    '/v1/traces/%69ngest',
    '/V1/traces/ingest',
    'http://localhost/v1/traces/ingest',
    '/v1/traces/ingest#frag',
    '*',
  ])('matches the path exactly, as API Gateway does: %s is 404 and never reaches ingest', async (target) => {
    expectJsonAnswer(await sendRaw(gateway.url, ingestRequest(target)), 404, 'not_found');
    expect(events).toHaveLength(0);
  });

  it('passes a query string through to the exact path', async () => {
    expectJsonAnswer(await sendRaw(gateway.url, ingestRequest('/v1/traces/ingest?a=1&a=2')), 200);
    expect(events[0]).toMatchObject({ path: '/v1/traces/ingest', multiValueQueryStringParameters: { a: ['1', '2'] } });
  });

  it.each([
    ['headers over 16 KB', `POST /v1/traces/ingest HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers_too_large'],
    ['two different Content-Length headers', 'POST /v1/traces/ingest HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}', 400, 'malformed_request'],
    ['an unknown method', 'BREW /v1/traces/ingest HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'malformed_request'],
    ['a request line with a broken version', 'GET / HTTP/1.x\r\n\r\n', 400, 'malformed_request'],
    ['a header without a colon', 'POST /v1/traces/ingest HTTP/1.1\r\nHost x\r\n\r\n', 400, 'malformed_request'],
    ['Content-Length and chunked together', 'POST /v1/traces/ingest HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400, 'malformed_request'],
    ['a bad chunk size', 'POST /v1/traces/ingest HTTP/1.1\r\nHost: x\r\nX-API-Key: k\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', 400, 'malformed_request'],
  ])('answers %s from the parser as JSON with X-Request-Id', async (_, bytes, status, code) => {
    expectJsonAnswer(await sendRaw(gateway.url, bytes), status, code);
  });

  it('keeps serving after a fuzz of malformed request lines and headers', async () => {
    let seed = 14;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    const pieces = ['GET', 'POST', 'BREW', ' ', '  ', '/', '//', 'http://', 'http://[', '/v1/traces/ingest', '?', '#', '%', '%zz', '\0', '\x7f', 'é', '\r\n', '\n', '\r',
      'HTTP/1.1', 'HTTP/9.9', 'HTTP/1.1\r\n', 'Host: x\r\n', 'X-API-Key: k\r\n', 'Content-Length: 5\r\n', 'Content-Length: -1\r\n', 'Content-Length: 99999999999999999999\r\n',
      'Transfer-Encoding: chunked\r\n', ': empty-name\r\n', 'X: \x01\r\n', '\r\n\r\n', '{}', 'a'.repeat(300)];
    const requests = Array.from({ length: 150 }, () => Array.from({ length: 1 + Math.floor(random() * 12) }, () => pieces[Math.floor(random() * pieces.length)]).join(''));
    for (let i = 0; i < requests.length; i += 15) {
      const answers = await Promise.all(requests.slice(i, i + 15).map((bytes) => sendRaw(gateway.url, Buffer.from(bytes, 'latin1'))));
      for (const answer of answers) {
        if (answer.status === undefined) continue;
        expect(answer.headers['x-request-id']).toBeDefined();
        if (answer.status !== 200) expect(answer.headers['content-type']).toBe('application/json');
      }
    }
    expectJsonAnswer(await sendRaw(gateway.url, ingestRequest('/v1/traces/ingest')), 200);
  });
});

describe('routePath', () => {
  it('is the literal path of an origin-form target and undefined otherwise', () => {
    expect(routePath('/v1/traces/ingest?x=/y')).toBe('/v1/traces/ingest');
    expect(routePath('/a/../b')).toBe('/a/../b');
    expect(routePath('http://h/v1/traces/ingest')).toBeUndefined();
    expect(routePath('*')).toBeUndefined();
  });
});

describe('local HTTP gateway: behaves like the deployed API Gateway (issue 19)', () => {
  const captured: APIGatewayProxyEvent[] = [];
  const started: HttpGateway[] = [];
  const echo = async (event: APIGatewayProxyEvent) => {
    captured.push(event);
    return { statusCode: 200, headers: { 'Content-Type': 'application/json' }, body: '{}' };
  };
  async function gatewayWith(behaviour: Partial<GatewayBehaviour>, handler: ProxyHandler = echo): Promise<string> {
    const started_ = await startHttpGateway({ port: 0, handler, behaviour });
    started.push(started_);
    return started_.url;
  }
  afterAll(() => Promise.all(started.map((g) => g.stop())));
  beforeEach(() => captured.splice(0));

  const post = (url: string, body: Buffer | string, headers: Record<string, string> = {}) =>
    fetch(`${url}/v1/traces/ingest`, { method: 'POST', headers: { 'X-API-Key': 'k', 'Content-Type': 'application/json', ...headers }, body });
  const json = '{"traces":[]}';

  async function expectGatewayAnswer(response: Response, status: number, code: string): Promise<Record<string, unknown>> {
    expect(response.status).toBe(status);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ code, detail: expect.any(String), request_id: response.headers.get('x-request-id') });
    return body;
  }

  it.each([
    ['inflate-keep-header', 'gzip'],
    ['inflate-drop-header', null],
    ['pass-through', 'gzip'],
  ] as const)('with content encoding %s, hands the function the body and Content-Encoding %s', async (contentEncoding, header) => {
    const url = await gatewayWith({ contentEncoding });
    await post(url, gzipSync(json), { 'Content-Encoding': 'gzip' });
    const [event] = captured;
    expect(event?.isBase64Encoded).toBe(true);
    const body = Buffer.from(event?.body ?? '', 'base64');
    expect(contentEncoding === 'pass-through' ? gunzipSync(body).toString() : body.toString()).toBe(json);
    expect(event?.headers['Content-Encoding'] ?? null).toBe(header);
  });

  it('answers 415 for a body that is not in the coding it names, or a coding the gateway cannot decode, without invoking the function', async () => {
    const url = await gatewayWith({});
    await expectGatewayAnswer(await post(url, json, { 'Content-Encoding': 'gzip' }), 415, 'unsupported_content_encoding');
    await expectGatewayAnswer(await post(url, gzipSync(json), { 'Content-Encoding': 'br' }), 415, 'unsupported_content_encoding');
    expect(captured).toHaveLength(0);
    await post(url, deflateSync(json), { 'Content-Encoding': 'deflate' });
    expect(Buffer.from(captured[0]?.body ?? '', 'base64').toString()).toBe(json);
  });

  it('passes bodies of binary media types base64-encoded and others as text', async () => {
    const url = await gatewayWith({ binaryMediaTypes: ['application/x-protobuf'] });
    await post(url, json);
    await post(url, Buffer.from([0x0a, 0x00]), { 'Content-Type': 'application/x-protobuf' });
    expect(captured.map((event) => [event.isBase64Encoded, event.body])).toEqual([
      [false, json],
      [true, Buffer.from([0x0a, 0x00]).toString('base64')],
    ]);
  });

  it('answers 413 payload_too_large over the request payload limit, saying to split and not to retry', async () => {
    const url = await gatewayWith({ maxPayloadBytes: 1_000 });
    const response = await post(url, 'x'.repeat(1_001));
    expect(response.headers.get('retry-after')).toBeNull();
    expect((await expectGatewayAnswer(response, 413, 'payload_too_large')).detail).toMatch(/split the batch.*cannot succeed/);
    expect(captured).toHaveLength(0);
  });

  it('answers 500 request_not_delivered, without Retry-After, when the event is over the invoke payload limit, gzip inflated or not', async () => {
    const url = await gatewayWith({ invokePayloadBytes: 20_000 });
    expect((await post(url, 'x'.repeat(12_000))).status).toBe(200);
    const plain = await post(url, 'x'.repeat(15_000));
    expect(plain.headers.get('retry-after')).toBeNull();
    expect((await expectGatewayAnswer(plain, 500, 'request_not_delivered')).detail).toMatch(/split the batch/);
    await expectGatewayAnswer(await post(url, gzipSync('x'.repeat(15_000)), { 'Content-Encoding': 'gzip' }), 500, 'request_not_delivered');
    await expectGatewayAnswer(await post(url, gzipSync(Buffer.alloc(50_000_000)), { 'Content-Encoding': 'gzip' }), 500, 'request_not_delivered');
    expect(captured).toHaveLength(1);
  });

  it('answers an event over the invoke payload with the bare 413 "Request Too Long" some deployments show, when configured so', async () => {
    const url = await gatewayWith({ invokePayloadBytes: 20_000, invokePayloadRefusal: 'request-too-long' });
    const response = await post(url, 'x'.repeat(15_000));
    expect(response.status).toBe(413);
    await expect(response.json()).resolves.toEqual({ message: 'Request Too Long' });
    expect(captured).toHaveLength(0);
  });

  it('answers 504 gateway_timeout with Retry-After when the function outlives the integration timeout', async () => {
    const url = await gatewayWith({ integrationTimeoutMs: 50 }, () => new Promise((resolve) => setTimeout(() => resolve({ statusCode: 200, body: '{}' }), 500)));
    const response = await post(url, json);
    expect(response.headers.get('retry-after')).toBe('5');
    await expectGatewayAnswer(response, 504, 'gateway_timeout');
  });

  it('answers 502 unavailable when the function throws or answers something that is not a proxy result', async () => {
    const throwing = await gatewayWith({}, () => Promise.reject(new Error('boom')));
    await expectGatewayAnswer(await post(throwing, json), 502, 'unavailable');
    const malformed = await gatewayWith({}, () => Promise.resolve({ body: 'x' } as unknown as APIGatewayProxyResult));
    await expectGatewayAnswer(await post(malformed, json), 502, 'unavailable');
  });

  it('answers another method on a route 404, as the deployed API does (Missing Authentication Token made 404)', async () => {
    const url = await gatewayWith({});
    await expectGatewayAnswer(await fetch(`${url}/v1/traces/ingest`), 404, 'not_found');
  });

  it('answers 401 without X-API-Key on the JSON route', async () => {
    const url = await gatewayWith({});
    await expectGatewayAnswer(await fetch(`${url}/v1/traces/ingest`, { method: 'POST', body: json }), 401, 'invalid_api_key');
  });

  it.each([
    ['a request without Host', 'POST /v1/traces/ingest HTTP/1.1\r\nX-API-Key: k\r\nContent-Length: 2\r\n\r\n{}', 400, 'malformed_request'],
    ['Expect: 200-ok', 'POST /v1/traces/ingest HTTP/1.1\r\nHost: x\r\nX-API-Key: k\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}', 417, 'expectation_failed'],
  ])('answers %s as JSON with X-Request-Id, not Node\'s bare status', async (_, bytes, status, code) => {
    const url = await gatewayWith({});
    const answer = await sendRaw(url, bytes);
    expectJsonAnswer(answer, status, code);
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(captured).toHaveLength(0);
  });
});
