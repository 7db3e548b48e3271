import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Http2Server, Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { setTimeout as sleep } from 'node:timers/promises';

type Request = IncomingMessage | Http2ServerRequest;
type Response = ServerResponse | Http2ServerResponse;
type Handler = (request: Request, response: Response) => void;

/** kinesalite's requests, counted so that its store is closed only once none is at work on it. */
export interface KinesaliteRequests {
  /**
   * Refuses every request from now on with a 503 (retryable, as Kinesis's own ServiceUnavailable is), then
   * waits for those already inside kinesalite to answer, for at most `graceMs`. Resolves to how many have not.
   */
  drain(graceMs: number): Promise<number>;
}

/**
 * kinesalite answers a request after a chain of callbacks on its LevelDB store, and a store error there is
 * thrown (`if (err) throw err` in its request handler): an uncaught exception of the process it runs in. Its
 * `close()` closes the store at once, whatever is under way, so an engine stopped while a PutRecords or a
 * GetRecords is still at work ended the jest process running it (the Database-is-not-open error, or, before
 * devkit/engines/leveldown-closed-guard.ts, a segmentation fault). This takes kinesalite's request handler
 * off its HTTP/1.1 server and serves it, counted, on both `servers`.
 */
export function countKinesaliteRequests(http1: Server, servers: readonly (Server | Http2Server)[]): KinesaliteRequests {
  const handlers = http1.listeners('request') as Handler[];
  http1.removeAllListeners('request');
  const working = new Set<Response>();
  let draining = false;
  const done = (response: Response) => working.delete(response);

  const handle: Handler = (request, response) => {
    if (draining) {
      // No Connection header: HTTP/2 refuses one. The connections go when the engine stops.
      (response as ServerResponse).writeHead(503, { 'Content-Type': 'application/x-amz-json-1.1' });
      response.end(JSON.stringify({ __type: 'ServiceUnavailableException', message: 'kinesalite is stopping' }));
      return;
    }
    working.add(response);
    // kinesalite answers once its store work is queued: what it queues after (GetRecords deletes expired records
    // after its answer) is queued in the same turn, and leveldown lets work queued before a close finish first.
    const end = response.end.bind(response) as (...args: unknown[]) => Response;
    (response as { end: (...args: unknown[]) => Response }).end = (...args: unknown[]) => {
      done(response);
      return end(...args);
    };
    // A request whose body never came whole never reaches the store (kinesalite starts on the body's end).
    request.once('close', () => {
      if (!request.complete) done(response);
    });
    for (const handler of handlers) handler(request, response);
  };
  for (const server of servers) server.on('request', handle);

  return {
    async drain(graceMs) {
      draining = true;
      const deadline = Date.now() + graceMs;
      while (working.size > 0 && Date.now() < deadline) await sleep(5);
      return working.size;
    },
  };
}
