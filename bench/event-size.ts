import { GATEWAY_MAX_HEADER_BYTES, LAMBDA_SYNC_PAYLOAD_BYTES, MAX_DECODED_BODY_BYTES } from '../lambda/shared/request-limits.js';
import { restApiEvent } from '../devkit/lambda/lambda-events.js';
import { buildBatch } from '../devkit/builders/trace-builders.js';
import type { BenchResult } from './types.js';

/** Headers filling API Gateway's 10,240-byte allowance, in 64 headers. */
const fullHeaders: [string, string][] = Array.from({ length: 64 }, (_, i) => [`X-Header-${String(i).padStart(2, '0')}`, 'v'.repeat(Math.floor(GATEWAY_MAX_HEADER_BYTES / 64) - 12)]);

const eventBytes = (body: string | Buffer) => Buffer.byteLength(JSON.stringify(restApiEvent({ headers: fullHeaders, body })));

/**
 * The sizes the request-size ceiling rests on (docs/deploy.md "One ceiling"): the Lambda event of a body
 * at the ceiling as the stack passes it (base64), and what passing JSON as text instead would cost, on a
 * realistic batch and on the worst body (escaped quotes).
 */
export async function runEventSizeBench(): Promise<BenchResult[]> {
  const ceilingEvent = eventBytes(Buffer.alloc(MAX_DECODED_BODY_BYTES, 0x20));
  const realistic = JSON.stringify(buildBatch(200));
  const worst = `{"traces":[{"attributes":"${'\\"'.repeat(200_000)}"}]}`;
  const textRatio = (text: string) => (eventBytes(text) - eventBytes('')) / Buffer.byteLength(text);
  const base64Ratio = (text: string) => (eventBytes(Buffer.from(text)) - eventBytes('')) / Buffer.byteLength(text);
  const round = (value: number) => Math.round(value * 1000) / 1000;
  return [
    {
      group: 'event-size',
      metric: `Lambda event of a ${MAX_DECODED_BODY_BYTES}-byte body, base64, headers at 10,240 B (twice)`,
      value: ceilingEvent,
      unit: 'B',
      baseline: LAMBDA_SYNC_PAYLOAD_BYTES,
      ratio: round(ceilingEvent / LAMBDA_SYNC_PAYLOAD_BYTES),
      target: '< 1 (Lambda\'s synchronous payload)',
    },
    {
      group: 'event-size',
      metric: `event bytes per body byte, realistic batch (${Buffer.byteLength(realistic)} B): as text (JSON-escaped) / base64`,
      value: round(textRatio(realistic)),
      unit: 'x',
      baseline: round(base64Ratio(realistic)),
      ratio: round(textRatio(realistic) / base64Ratio(realistic)),
    },
    {
      group: 'event-size',
      metric: 'event bytes per body byte, worst body (escaped quotes): as text / base64',
      value: round(textRatio(worst)),
      unit: 'x',
      baseline: round(base64Ratio(worst)),
      ratio: round(textRatio(worst) / base64Ratio(worst)),
      note: 'a ceiling for text events must hold for this body: 6 MB / 1.99 ≈ 3 MiB',
    },
  ];
}
