import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

export interface Seen {
  key: string;
  traceIds: string[];
  status: number;
  traces: Record<string, unknown>[];
}

/** A stand-in for the service over real HTTP, for tests across processes: records each request's key and trace ids, replays a stored key's answer. */
export class FakeService {
  readonly requests: Seen[] = [];
  url = '';
  private readonly server: Server;
  private readonly stored = new Map<string, [number, unknown]>();

  constructor(public answer: (traceIds: string[], key: string) => [number, unknown] = (ids) => [200, { accepted: ids.length, rejected: 0, errors: [] }]) {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const traces = (JSON.parse(gunzipSync(Buffer.concat(chunks)).toString('utf8')) as { traces: (Record<string, unknown> & { trace_id: string })[] }).traces;
        const key = String(request.headers['idempotency-key']);
        const traceIds = traces.map((trace) => trace.trace_id);
        // As the service does (docs/api.md, idempotency): a key already stored gets its stored answer again.
        const [status, body] = this.stored.get(key) ?? this.answer(traceIds, key);
        if (status === 200) this.stored.set(key, [status, body]);
        this.requests.push({ key, traceIds, status, traces });
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

  /**
   * How many times each trace was stored, counting a key once as the service does (a resend under a key already
   * answered 200 is a replay, not a second copy): 1 everywhere means exactly once.
   */
  storedCounts(): Map<string, number> {
    const keys = new Map<string, string[]>();
    for (const request of this.requests) if (request.status === 200 && !keys.has(request.key)) keys.set(request.key, request.traceIds);
    const counts = new Map<string, number>();
    for (const ids of keys.values()) for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
    return counts;
  }

  delivered(): string[] {
    return this.requests.filter((request) => request.status === 200).flatMap((request) => request.traceIds);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
