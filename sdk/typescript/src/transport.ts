import type { Answer } from './policy.js';

export const USER_AGENT = 'trace-ingest-typescript/0.1.0';

/** Sends one gzip batch and returns the answer; never throws. */
export interface Transport {
  /** Where it posts, for messages. */
  readonly url?: string;
  post(body: Uint8Array, headers: Record<string, string>): Promise<Answer>;
}

export const INGEST_PATH = '/v1/traces/ingest';
/** The service's routes: a base URL that ends in one names a route, not the service. */
const ROUTES = [INGEST_PATH, '/otel/v1/traces', '/otel/v1/logs'];
const LOCAL_HOST = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:|\/|$)/i;

/**
 * `{baseUrl}/v1/traces/ingest`, or a TypeError that gives the base URL to use: for one without a scheme (which
 * `new URL` refuses with a bare "Invalid URL", or reads `localhost:3000` as a scheme), and for one that already
 * names a route (whose requests would be answered `not_found`).
 */
export function ingestUrl(baseUrl: string): string {
  const base = baseUrl.trim().replace(/\/+$/, '');
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(base)) {
    const scheme = LOCAL_HOST.test(base) ? 'http' : 'https';
    throw new TypeError(`baseUrl ${JSON.stringify(baseUrl)} has no scheme: use ${JSON.stringify(`${scheme}://${base.replace(/^\/+/, '')}`)}`);
  }
  let url: URL;
  try {
    url = new URL(`${base}${INGEST_PATH}`);
  } catch {
    throw new TypeError(`baseUrl ${JSON.stringify(baseUrl)} is not a URL: give the service's address, such as "https://traces.example.com"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`baseUrl must be an http(s) URL, got ${baseUrl}`);
  const route = ROUTES.find((path) => new URL(base).pathname.replace(/\/+$/, '').endsWith(path));
  if (route) {
    throw new TypeError(`baseUrl ${JSON.stringify(baseUrl)} already names the route ${route}: use ${JSON.stringify(base.slice(0, base.length - route.length))} (the SDK adds ${INGEST_PATH})`);
  }
  return url.toString();
}

/** POSTs to `{baseUrl}/v1/traces/ingest` with `fetch` (connections kept alive by the runtime). */
export class FetchTransport implements Transport {
  readonly url: string;

  constructor(
    baseUrl: string,
    private readonly timeoutMs: number,
  ) {
    this.url = ingestUrl(baseUrl);
  }

  async post(body: Uint8Array, headers: Record<string, string>): Promise<Answer> {
    let response: Response;
    let text: string;
    try {
      response = await fetch(this.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(this.timeoutMs) });
      text = await response.text();
    } catch (error) {
      const name = (error as { name?: string }).name;
      return { status: null, headers: {}, body: null, failure: name === 'TimeoutError' || name === 'AbortError' ? 'timeout' : 'reset' };
    }
    const answerHeaders: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      answerHeaders[name.toLowerCase()] = value;
    });
    return { status: response.status, headers: answerHeaders, body: parseJson(text) };
  }
}

function parseJson(text: string): unknown {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}
