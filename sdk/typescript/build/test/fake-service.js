import { createServer } from 'node:http';
import { gunzipSync } from 'node:zlib';
/** A stand-in for the service over real HTTP, for tests across processes: records each request's key and trace ids. */
export class FakeService {
    answer;
    requests = [];
    url = '';
    server;
    constructor(answer = (ids) => [200, { accepted: ids.length, rejected: 0, errors: [] }]) {
        this.answer = answer;
        this.server = createServer((request, response) => {
            const chunks = [];
            request.on('data', (chunk) => chunks.push(chunk));
            request.on('end', () => {
                const traces = JSON.parse(gunzipSync(Buffer.concat(chunks)).toString('utf8')).traces;
                const key = String(request.headers['idempotency-key']);
                const traceIds = traces.map((trace) => trace.trace_id);
                const [status, body] = this.answer(traceIds, key);
                this.requests.push({ key, traceIds, status });
                const headers = { 'Content-Type': 'application/json' };
                if (status === 429 || status === 503)
                    headers['Retry-After'] = '1';
                response.writeHead(status, headers).end(JSON.stringify(body));
            });
        });
    }
    async start() {
        await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
        this.url = `http://127.0.0.1:${this.server.address().port}`;
        return this;
    }
    delivered() {
        return this.requests.filter((request) => request.status === 200).flatMap((request) => request.traceIds);
    }
    async close() {
        this.server.closeAllConnections();
        await new Promise((resolve) => this.server.close(resolve));
    }
}
