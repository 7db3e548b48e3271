import fc from 'fast-check';
import { createHarness, type Harness } from '../../support/ingest-harness.js';
import { buildTrace, gatewayEvent } from '../../../devkit/builders/trace-builders.js';

const DOCUMENTED = new Set([200, 400, 401, 402, 403, 413, 429, 503]);

describe('the handler on arbitrary input (fast-check)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ quotas: { minute: null, hour: null, day: null, month: null } });
  });

  async function expectDocumented(event: ReturnType<typeof gatewayEvent>) {
    const response = await h.invoke(event);
    expect(DOCUMENTED.has(response.statusCode)).toBe(true);
    expect(response.statusCode).not.toBe(503);
    const parsed = JSON.parse(response.body) as Record<string, unknown>;
    if (response.statusCode !== 200) expect(typeof parsed.detail).toBe('string');
  }

  it('answers any JSON body with a documented status', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), async (value) => {
        await expectDocumented(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify(value) }));
      }),
      { numRuns: 300 },
    );
  });

  it('answers any batch of arbitrary trace-like objects with 200 and one error per rejected trace', async () => {
    const traceLike = fc.oneof(
      fc.jsonValue(),
      fc.record({ timestamp: fc.oneof(fc.string(), fc.constant(new Date().toISOString())) }, { requiredKeys: [] }),
      fc.constant(buildTrace()).chain((t) => fc.dictionary(fc.constantFrom(...Object.keys(t)), fc.jsonValue()).map((o) => ({ ...t, ...o }))),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(traceLike, { minLength: 1, maxLength: 20 }), async (traces) => {
        const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify({ traces }) }));
        if (response.statusCode === 403) return; // a workspace_slug naming no workspace
        expect(response.statusCode).toBe(200);
        const result = JSON.parse(response.body) as { accepted: number; rejected: number; errors: { index: number }[] };
        expect(result.accepted + result.rejected).toBe(traces.length);
        expect(result.errors).toHaveLength(result.rejected);
      }),
      { numRuns: 200 },
    );
  });

  it('answers arbitrary bytes, plain or declared gzip, with a documented status', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 2048 }), fc.boolean(), async (bytes, declaredGzip) => {
        await expectDocumented(
          gatewayEvent({ apiKey: h.orgKey, body: Buffer.from(bytes), headers: declaredGzip ? { 'Content-Encoding': 'gzip' } : {} }),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('answers arbitrary strings and headers with a documented status', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary' }), fc.dictionary(fc.string(), fc.string()), fc.option(fc.string()), async (text, headers, apiKey) => {
        await expectDocumented(gatewayEvent({ apiKey: apiKey ?? undefined, body: text, headers }));
      }),
      { numRuns: 300 },
    );
  });
});
