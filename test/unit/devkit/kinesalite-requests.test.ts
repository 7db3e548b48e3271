import { createServer, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { countKinesaliteRequests } from '../../../devkit/engines/kinesalite-requests.js';

/** An HTTP/1.1 server standing in for kinesalite's: its one handler keeps each response until told to end it. */
async function standIn() {
  const held: ServerResponse[] = [];
  const server = createServer((_request, response) => held.push(response));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const requests = countKinesaliteRequests(server, [server]);
  const post = () =>
    new Promise<number>((resolve, reject) => {
      const sent = request({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', method: 'POST', agent: false }, (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      // A request the stand-in never answers fails the test in seconds instead of holding it to jest's timeout.
      sent.setTimeout(5_000, () => sent.destroy(new Error('no answer within 5 s')));
      sent.on('error', reject);
      sent.end('{}');
    });
  const arrived = async (count: number) => {
    while (held.length < count) await new Promise((resolve) => setTimeout(resolve, 5));
  };
  return { server, requests, held, post, arrived };
}

const close = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

describe('countKinesaliteRequests', () => {
  it('waits for the requests already inside kinesalite, and refuses new ones with a 503 meanwhile', async () => {
    const { server, requests, held, post, arrived } = await standIn();
    try {
      const first = post();
      await arrived(1);
      const draining = requests.drain(10_000);
      expect(await post()).toBe(503);
      held[0]!.end('{}');
      expect(await first).toBe(200);
      expect(await draining).toBe(0);
    } finally {
      await close(server);
    }
  });

  it('gives up after the grace and says how many are still at work', async () => {
    const { server, requests, post, arrived } = await standIn();
    try {
      void post().catch(() => undefined);
      void post().catch(() => undefined);
      await arrived(2);
      const started = Date.now();
      expect(await requests.drain(100)).toBe(2);
      expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    } finally {
      await close(server);
    }
  });
});
