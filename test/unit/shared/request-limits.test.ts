import { restApiEvent } from '../../../devkit/lambda/lambda-events.js';
import {
  base64Length,
  GATEWAY_MAX_HEADER_BYTES,
  LAMBDA_SYNC_PAYLOAD_BYTES,
  MAX_DECODED_BODY_BYTES,
} from '../../../lambda/shared/request-limits.js';

/** The event API Gateway would build for a body of `bodyBytes` decoded bytes and the most header bytes it lets through. */
function worstCaseEventBytes(bodyBytes: number): number {
  // Header names and values filling the gateway's 10,240-byte allowance, in 64 headers of ~150 bytes.
  const headers: [string, string][] = Array.from({ length: 64 }, (_, i) => [`X-Header-${String(i).padStart(2, '0')}`, 'v'.repeat(Math.floor(GATEWAY_MAX_HEADER_BYTES / 64) - 12)]);
  const event = restApiEvent({ headers, body: Buffer.alloc(bodyBytes, 0x61), sourceIp: '255.255.255.255' });
  return Buffer.byteLength(JSON.stringify(event));
}

describe('the request-size ceiling', () => {
  it('is 4 MiB of decoded body', () => {
    expect(MAX_DECODED_BODY_BYTES).toBe(4_194_304);
  });

  it('fits the base64 event of a ceiling-sized body, with a full header allowance, into Lambda\'s synchronous payload', () => {
    const eventBytes = worstCaseEventBytes(MAX_DECODED_BODY_BYTES);
    expect(eventBytes).toBeGreaterThan(base64Length(MAX_DECODED_BODY_BYTES) + GATEWAY_MAX_HEADER_BYTES);
    expect(eventBytes).toBeLessThanOrEqual(LAMBDA_SYNC_PAYLOAD_BYTES);
  });

  it('leaves a margin of at least 500 kB for what the event may carry beyond this model', () => {
    expect(LAMBDA_SYNC_PAYLOAD_BYTES - worstCaseEventBytes(MAX_DECODED_BODY_BYTES)).toBeGreaterThan(500_000);
  });

  it('could not be 4.5 MiB: that body alone, base64-encoded, fills the invoke limit, leaving no room for the event around it', () => {
    expect(base64Length(4.5 * 1024 * 1024)).toBe(LAMBDA_SYNC_PAYLOAD_BYTES);
    expect(worstCaseEventBytes(4.5 * 1024 * 1024)).toBeGreaterThan(LAMBDA_SYNC_PAYLOAD_BYTES);
  });
});
