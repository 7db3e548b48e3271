import type { Readable } from 'node:stream';
import type { KinesisClient } from '@aws-sdk/client-kinesis';

/**
 * Latency injected into a Kinesis client, to see what the ingest path does when Kinesis answers slowly
 * (resharding, a hot partition, network trouble) without loading the host. The client's own HTTP handler
 * (HTTP/2, as deployed) carries every call to kinesalite, which writes the records at once; the answer is then
 * held for a delay drawn per call. A call whose delay outlasts its `requestTimeout` fails as the SDK fails it
 * (`TimeoutError`) once that timeout is reached, and `abortSignal` ends the wait: the records are on the stream
 * and the caller does not know it, the case that makes copies.
 */

/** A latency distribution given by its median and 99th percentile. */
export interface LatencyPercentiles {
  p50Ms: number;
  p99Ms: number;
}

/** z of the 99th percentile of the standard normal distribution. */
const Z_99 = 2.3263;

/**
 * Delays drawn from the log-normal distribution with the given median and 99th percentile (a long right tail,
 * the usual shape of service latency); `random` seeded for repeatable runs.
 */
export function logNormalDelays({ p50Ms, p99Ms }: LatencyPercentiles, random: () => number = Math.random): () => number {
  const mu = Math.log(p50Ms);
  const sigma = Math.log(p99Ms / p50Ms) / Z_99;
  return () => {
    // Box-Muller; 1 - random() keeps the logarithm finite.
    const normal = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    return Math.exp(mu + sigma * normal);
  };
}

type RequestHandler = KinesisClient['config']['requestHandler'];
type HandlerOptions = { abortSignal?: AbortSignal; requestTimeout?: number };

/**
 * Puts the injection into `client`'s request handler, in place, so that everything else the client was built
 * with (timeouts, retries, endpoint, credentials) stays as deployed. Returns every delay drawn, in order.
 */
export function injectKinesisLatency(client: KinesisClient, delayMs: () => number): { delays: number[] } {
  const inner = client.config.requestHandler as RequestHandler & {
    updateHttpClientConfig?(key: never, value: never): void;
    httpHandlerConfigs?(): Record<string, unknown>;
  };
  const delays: number[] = [];
  const handler = {
    handle: async (request: unknown, options: HandlerOptions = {}) => {
      const started = Date.now();
      const answer = (await (inner.handle as (r: unknown, o: HandlerOptions) => Promise<{ response: { body?: unknown } }>)(request, options)) as {
        response: { body?: unknown };
      };
      const delay = delayMs();
      delays.push(delay);
      // The call's own timeout, else the client's (as @smithy/node-http-handler chooses).
      const timeout = options.requestTimeout ?? ((inner.httpHandlerConfigs?.() ?? {}) as { requestTimeout?: number }).requestTimeout;
      const left = timeout === undefined ? Infinity : timeout - (Date.now() - started);
      const outcome = await wait(Math.min(delay, left), options.abortSignal);
      if (outcome === 'aborted' || delay >= left) {
        (answer.response.body as Readable | undefined)?.destroy?.();
        if (outcome === 'aborted') throw Object.assign(new Error('Request aborted'), { name: 'AbortError' });
        throw Object.assign(new Error(`Stream timed out because of no activity for ${timeout} ms (injected latency ${Math.round(delay)} ms)`), {
          name: 'TimeoutError',
        });
      }
      return answer;
    },
    updateHttpClientConfig: (key: never, value: never) => inner.updateHttpClientConfig?.(key, value),
    httpHandlerConfigs: () => inner.httpHandlerConfigs?.() ?? {},
    destroy: () => inner.destroy?.(),
  };
  (client.config as { requestHandler: unknown }).requestHandler = handler;
  return { delays };
}

function wait(ms: number, signal: AbortSignal | undefined): Promise<'waited' | 'aborted'> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve('aborted');
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve('waited');
    }, Math.max(0, ms));
    const onAbort = () => {
      clearTimeout(timer);
      resolve('aborted');
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The q-th quantile (0 to 1) of `values`, nearest rank. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
