import { createHarness, type Harness } from '../../support/ingest-harness.js';
import { gatewayEvent } from '../../../devkit/builders/trace-builders.js';

const UNLIMITED = { minute: null, hour: null, day: null, month: null };

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ quotas: UNLIMITED });
});

/** Status, refusal code and each rejected trace's issue codes with their paths: what a client acts on. */
async function answerTo(body: string) {
  const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body }));
  const parsed = JSON.parse(response.body) as { code?: string; errors?: { index: number; issues: { path: string; code: string }[] }[] };
  const issues = parsed.errors?.map((e) => ({ index: e.index, issues: e.issues.map(({ path, code }) => ({ path, code })) }));
  return { status: response.statusCode, code: parsed.code, issues };
}

describe('the JSON route on values nested and sized to its limits', () => {
  it('answers attributes nested 5,000 deep as it answers an empty array: 200, the trace rejected (issue 37)', async () => {
    const deep = await answerTo(`{"traces":[{"timestamp":"x","attributes":${'['.repeat(5000)}${']'.repeat(5000)}}]}`);
    const plain = await answerTo('{"traces":[{"timestamp":"x","attributes":[]}]}');
    expect(plain).toEqual({
      status: 200,
      code: undefined,
      issues: [{ index: 0, issues: [{ path: '/attributes', code: 'invalid_type' }, { path: '/timestamp', code: 'invalid_timestamp' }] }],
    });
    expect(deep).toEqual(plain);
  });
});
