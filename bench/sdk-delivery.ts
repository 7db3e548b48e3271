import { cpus, loadavg } from 'node:os';
import { median, round } from './engines-util.js';
import type { StackProcess } from './stack-process.js';
import type { BenchResult } from './types.js';

/**
 * Delivery ÷ a bare keep-alive client, one protocol for both SDKs (groups `sdk` and `sdk-python`): one process's
 * throughput to `npm start`'s stack, from `flush()` to the last answer, against a bare client on a kept-alive
 * connection posting the SDK's own gzip bodies one after another (each with a new Idempotency-Key, as the SDK
 * sends one) to the same stack.
 *
 * The two race: the bare client (a thread or process of its own) posts those bodies again and again for as long
 * as the SDK's flush lasts, and is credited with the traces it had answered by the flush's end (a request cut by
 * it for the share that fell inside). Run one after the other, the two met swings of the machine's load seconds
 * apart (on the shared 2-CPU machine single rounds ranged from 0.45 to 1.54 with no change to either); racing,
 * every swing falls on both. Whoever sends its first request first is a request ahead for the whole race (half a
 * request of ten, ±5%), so races come in pairs, the SDK first in one and the bare client in the other, and a
 * pair's ratio is the traces the SDK delivered over those the bare client delivered in the same time. A round of
 * the SDK alone (it makes the bare client's bodies) and a race are run first and not counted: the stack just
 * started, its code not yet compiled hot, and the first round was the lowest in most earlier runs. The ratio is the
 * median of the pairs'.
 */
export const DELIVERY_TRACES = 5_000;
export const DELIVERY_PAIRS = 4;

/** One SDK and its bare client. */
export interface DeliveryContender {
  /** A new client with the round's traces queued (not timed). */
  prepare(): Promise<void>;
  /**
   * The prepared client's flush, raced by the bare client posting the bodies of the SDK's last flush; `first` sends
   * its first request first. `bareTraces` is undefined when there were no bodies yet (the SDK ran alone).
   */
  race(first: 'sdk' | 'bare'): Promise<{ sdkSeconds: number; bareTraces: number | undefined }>;
  /** Spans per trace of its workload. */
  spans(): number;
}

export interface DeliveryMeasure {
  sdkRates: number[];
  bareRates: number[];
  pairRatios: number[];
  load: string;
  spans: number;
}

export async function measureDelivery(contender: DeliveryContender): Promise<DeliveryMeasure> {
  const load = loadavg()[0]?.toFixed(1) ?? '?';
  const race = async (first: 'sdk' | 'bare') => {
    await contender.prepare();
    return contender.race(first);
  };
  await race('sdk');
  await race('bare');
  const sdkRates: number[] = [];
  const bareRates: number[] = [];
  const pairRatios: number[] = [];
  for (let n = 0; n < DELIVERY_PAIRS; n++) {
    let sdkTraces = 0;
    let bareTraces = 0;
    for (const first of n % 2 === 0 ? (['sdk', 'bare'] as const) : (['bare', 'sdk'] as const)) {
      const result = await race(first);
      if (result.bareTraces === undefined) throw new Error('the bare client had no bodies');
      sdkRates.push(DELIVERY_TRACES / result.sdkSeconds);
      bareRates.push(result.bareTraces / result.sdkSeconds);
      sdkTraces += DELIVERY_TRACES;
      bareTraces += result.bareTraces;
    }
    pairRatios.push(sdkTraces / bareTraces);
  }
  return { sdkRates, bareRates, pairRatios, load, spans: contender.spans() };
}

/** Credited traces of a bare client's requests (`[start, end, traces]`, one clock) within `[from, to]`. */
export function tracesWithin(requests: readonly (readonly [number, number, number])[], from: number, to: number): number {
  let traces = 0;
  for (const [start, end, count] of requests) traces += end > start ? (count * Math.max(0, Math.min(end, to) - Math.max(start, from))) / (end - start) : 0;
  return traces;
}

/** The row: metric names contain the language and "deliver". */
export function deliveryRow(options: { group: string; language: string; sdk: string; bare: string; stack: StackProcess; measure: DeliveryMeasure }): BenchResult {
  const { measure } = options;
  return {
    group: options.group,
    metric: `${options.language}: deliver, one process's throughput to the local stack ÷ a bare keep-alive client racing it (${DELIVERY_TRACES} traces of ${measure.spans} spans)`,
    value: round(median(measure.sdkRates)),
    unit: 'traces/s',
    baseline: round(median(measure.bareRates)),
    ratio: round(median(measure.pairRatios), 2),
    target: '>= 0.9',
    note:
      `from flush() to the last answer (${options.sdk}), traces queued beforehand. Baseline: ${options.bare} posting the SDK's gzip bodies one ` +
      `after another, each with a new Idempotency-Key, again and again while the flush lasts, credited with the traces answered by its end. ` +
      `A round of the SDK alone and a race not counted, then ${DELIVERY_PAIRS} pairs of races (the SDK's first request first in one, the bare ` +
      `client's in the other); value and baseline are the medians of the races' rates, ratio the median of the pairs' (${measure.pairRatios
        .map((ratio) => ratio.toFixed(2))
        .join(', ')}). ${options.stack.description}; ${cpus().length} CPUs, load average ${measure.load} when it started`,
  };
}
