import { connect } from 'node:net';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { type HttpGateway, routePath, startHttpGateway } from '../../../scripts/local/http-gateway.js';

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
