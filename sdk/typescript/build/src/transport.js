export const USER_AGENT = 'trace-ingest-typescript/0.1.0';
/** POSTs to `{baseUrl}/v1/traces/ingest` with `fetch` (connections kept alive by the runtime). */
export class FetchTransport {
    timeoutMs;
    url;
    constructor(baseUrl, timeoutMs) {
        this.timeoutMs = timeoutMs;
        const url = new URL(`${baseUrl.replace(/\/+$/, '')}/v1/traces/ingest`);
        if (url.protocol !== 'http:' && url.protocol !== 'https:')
            throw new TypeError(`baseUrl must be an http(s) URL, got ${baseUrl}`);
        this.url = url.toString();
    }
    async post(body, headers) {
        let response;
        let text;
        try {
            response = await fetch(this.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(this.timeoutMs) });
            text = await response.text();
        }
        catch (error) {
            const name = error.name;
            return { status: null, headers: {}, body: null, failure: name === 'TimeoutError' || name === 'AbortError' ? 'timeout' : 'reset' };
        }
        const answerHeaders = {};
        response.headers.forEach((value, name) => {
            answerHeaders[name.toLowerCase()] = value;
        });
        return { status: response.status, headers: answerHeaders, body: parseJson(text) };
    }
}
function parseJson(text) {
    try {
        return text ? JSON.parse(text) : null;
    }
    catch {
        return null;
    }
}
