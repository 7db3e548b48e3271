import { KinesisClient } from '@aws-sdk/client-kinesis';
import { injectKinesisLatency, logNormalDelays, quantile } from '../../../devkit/engines/kinesis-latency.js';
import { seededRandom } from '../../../devkit/dynamo/virtual-clock.js';

/** A client whose own handler answers at once, with the injection put in front of it. */
function injected(delayMs: number) {
  const client = new KinesisClient({ region: 'us-east-1', requestHandler: { requestTimeout: 60_000 } });
  const destroyed: boolean[] = [];
  const body = { destroy: () => void destroyed.push(true) };
  (client.config as { requestHandler: unknown }).requestHandler = {
    handle: async () => ({ response: { statusCode: 200, headers: {}, body } }),
    httpHandlerConfigs: () => ({ requestTimeout: 60_000 }),
  };
  const { delays } = injectKinesisLatency(client, () => delayMs);
  const handle = (options: { requestTimeout?: number; abortSignal?: AbortSignal }) =>
    (client.config.requestHandler as unknown as { handle(request: unknown, options: unknown): Promise<unknown> }).handle({}, options);
  return { handle, delays, destroyed };
}

describe('injectKinesisLatency', () => {
  it('holds the answer and then gives it, when the delay is within the call timeout', async () => {
    const { handle, delays } = injected(1);
    await expect(handle({ requestTimeout: 60_000 })).resolves.toMatchObject({ response: { statusCode: 200 } });
    expect(delays).toEqual([1]);
  });

  it('fails the call as the SDK does (TimeoutError) when the delay outlasts the call timeout, the answer dropped', async () => {
    const { handle, destroyed } = injected(600_000);
    await expect(handle({ requestTimeout: 5 })).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(destroyed).toEqual([true]);
  });

  it('ends the wait with an AbortError when the caller aborts', async () => {
    const { handle } = injected(600_000);
    const controller = new AbortController();
    const call = handle({ abortSignal: controller.signal });
    controller.abort();
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('draws log-normal delays with the median and 99th percentile asked for', () => {
    const draw = logNormalDelays({ p50Ms: 1_500, p99Ms: 5_000 }, seededRandom(27));
    const delays = Array.from({ length: 100_000 }, draw);
    expect(quantile(delays, 0.5)).toBeGreaterThan(1_450);
    expect(quantile(delays, 0.5)).toBeLessThan(1_550);
    expect(quantile(delays, 0.99)).toBeGreaterThan(4_750);
    expect(quantile(delays, 0.99)).toBeLessThan(5_250);
  });
});
