import type { Answer } from './policy.js';

export const USER_AGENT = 'trace-ingest-typescript/0.1.0';

/** Sends one gzip batch and returns the answer; never throws. */
export interface Transport {
  /** Where it posts, for messages. */
  readonly url?: string;
  post(body: Uint8Array, headers: Record<string, string>): Promise<Answer>;
}

/** POSTs to `{baseUrl}/v1/traces/ingest` with `fetch` (connections kept alive by the runtime). */
export class FetchTransport implements Transport {
  readonly url: string;

  constructor(
    baseUrl: string,
    private readonly timeoutMs: number,
  ) {
    const url = new URL(`${baseUrl.replace(/\/+$/, '')}/v1/traces/ingest`);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`baseUrl must be an http(s) URL, got ${baseUrl}`);
    this.url = url.toString();
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
