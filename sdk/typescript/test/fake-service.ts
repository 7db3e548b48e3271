import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

export interface Seen {
  key: string;
  traceIds: string[];
  status: number;
}

/** A stand-in for the service over real HTTP, for tests across processes: records each request's key and trace ids. */
export class FakeService {
  readonly requests: Seen[] = [];
  url = '';
  private readonly server: Server;

  constructor(public answer: (traceIds: string[], key: string) => [number, unknown] = (ids) => [200, { accepted: ids.length, rejected: 0, errors: [] }]) {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const traces = (JSON.parse(gunzipSync(Buffer.concat(chunks)).toString('utf8')) as { traces: { trace_id: string }[] }).traces;
        const key = String(request.headers['idempotency-key']);
        const traceIds = traces.map((trace) => trace.trace_id);
        const [status, body] = this.answer(traceIds, key);
        this.requests.push({ key, traceIds, status });
        const headers: Record<string, string> = { 'Content-Type': 'application/json' };
        if (status === 429 || status === 503) headers['Retry-After'] = '1';
        response.writeHead(status, headers).end(JSON.stringify(body));
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  delivered(): string[] {
    return this.requests.filter((request) => request.status === 200).flatMap((request) => request.traceIds);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
