import { gunzipSync } from 'node:zlib';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbIdempotencyStore } from '../../../lambda/ingest/adapters/idempotency/dynamodb-idempotency-store.js';
import { createHarness, ddbMock, type Harness } from '../../support/ingest-harness.js';
import { buildSpan, gatewayEvent, iso, NOW_MICROS } from '../../../devkit/builders/trace-builders.js';

/**
 * No value a client sends comes back in a message, nor into the idempotency record that keeps the response 24 h
 * (docs/operations.md: counts, trace ids and issue codes). A card number stands for any such value: in every member
 * whose value can be refused, in each way it can be. Left out are the two values the contract echoes as sent: `trace_id`
 * (`errors[].trace_id`, §3) and `workspace_slug` (the 403 of check 7, which refuses the whole batch).
 */

const CARD = 'card 4111-1111-1111-1111 exp 12/29';
/** Over the 1,024-character limit of the short string members. */
const LONG_CARD = `${CARD} ${'x'.repeat(1024)}`;
/** Ends with a lone surrogate, which UTF-8 storage cannot keep. */
const LONE_CARD = `${CARD}\ud800`;

/** Every run of 6 characters of the card, and every run of 4 or more of its digits: none may appear. */
const FRAGMENTS = [
  ...Array.from({ length: CARD.length - 5 }, (_, i) => CARD.slice(i, i + 6)),
  ...(CARD.match(/\d{4,}/g) ?? []),
];
const quoted = (text: string) => FRAGMENTS.filter((fragment) => text.includes(fragment));

const TEXT_MEMBERS = ['environment', 'root_span_name', 'model', 'session_id', 'agent_id', 'agent_name', 'user_id'];
const SPAN_TEXT_MEMBERS = ['name', 'model', 'session_id', 'agent_id', 'agent_name', 'user_id'];

/** One trace per way a member can be refused, each carrying the card in that member: every one is rejected. */
function cardTraces(): Record<string, unknown>[] {
  const trace = (overrides: Record<string, unknown>) => ({ timestamp: iso(), spans: [buildSpan()], ...overrides });
  const span = (overrides: Record<string, unknown>) => trace({ spans: [buildSpan(overrides)] });
  return [
    trace({ timestamp: CARD }),
    trace({ status: CARD }),
    trace({ duration_ms: CARD }),
    trace({ input_tokens: CARD }),
    trace({ spans: CARD }),
    trace({ spans: [CARD] }),
    trace({ attributes: CARD }),
    trace({ attributes: { note: CARD } }),
    trace({ attributes: [CARD] }),
    trace({ attributes: JSON.stringify({ tags: CARD }) }),
    trace({ attributes: JSON.stringify(CARD) }),
    ...TEXT_MEMBERS.flatMap((member) => [trace({ [member]: LONG_CARD }), trace({ [member]: LONE_CARD }), trace({ [member]: { card: CARD } })]),
    span({ span_id: CARD }),
    span({ parent_span_id: CARD }),
    span({ timestamp: CARD }),
    span({ kind: CARD }),
    span({ status: CARD }),
    span({ output_tokens: CARD }),
    span({ error_message: { card: CARD } }),
    span({ error_message: LONE_CARD }),
    ...['input', 'output', 'attributes'].flatMap((member) => [
      span({ [member]: CARD }),
      span({ [member]: { note: CARD } }),
      span({ [member]: [CARD] }),
      span({ [member]: LONE_CARD }),
    ]),
    ...SPAN_TEXT_MEMBERS.flatMap((member) => [span({ [member]: LONG_CARD }), span({ [member]: LONE_CARD }), span({ [member]: [CARD] })]),
  ];
}

/** Every command that wrote an idempotency record, as text, with the gzip response it stores unzipped. */
function idempotencyWrites(): string {
  return ddbMock
    .calls()
    .map((call) => call.args[0].input as { Item?: unknown; Key?: unknown; ExpressionAttributeValues?: Record<string, { B?: Uint8Array }> })
    .filter((input) => JSON.stringify(input.Item ?? input.Key ?? {}).includes('IDEM#'))
    .map((input) => {
      const response = input.ExpressionAttributeValues?.[':response']?.B;
      return `${JSON.stringify(input)}\n${response ? gunzipSync(response).toString('utf8') : ''}`;
    })
    .join('\n');
}

describe('values sent are never quoted back', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await createHarness({
      quotas: { minute: null, hour: null, day: null, month: null },
      idempotency: new DynamoDbIdempotencyStore(new DynamoDBClient({ region: 'us-east-1' }), 'rate'),
    });
  });

  it('keeps a card number sent in every refusable member out of the response and the idempotency record', async () => {
    const traces = cardTraces();
    // Accepted as sent, and stored: the answer to an accepted trace holds no member of it.
    traces.push({ timestamp: iso(), user_id: CARD, session_id: CARD, spans: [buildSpan({ input: JSON.stringify(CARD), user_id: CARD })] });
    const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify({ traces }), headers: { 'Idempotency-Key': 'card-batch' } }));

    expect(response.statusCode).toBe(200);
    expect(JSON.parse(response.body)).toMatchObject({ accepted: 1, rejected: traces.length - 1 });
    const stored = idempotencyWrites();
    expect(stored).toContain('"rejected":');
    expect({ response: quoted(response.body), stored: quoted(stored) }).toEqual({ response: [], stored: [] });
  });

  it('keeps it out of the OTLP route\'s partial success', async () => {
    const span = (spanId: string, attributes: { key: string; value: { stringValue: string } }[], name = 'chat', traceId = '5b8efff798038103d269b633813fc60c') => ({
      traceId,
      spanId,
      name,
      kind: 3,
      startTimeUnixNano: String(BigInt(NOW_MICROS) * 1000n),
      endTimeUnixNano: String(BigInt(NOW_MICROS + 1000) * 1000n),
      attributes,
      status: { code: 2, message: CARD },
    });
    const body = JSON.stringify({
      resourceSpans: [
        {
          resource: { attributes: [{ key: 'user.id', value: { stringValue: LONG_CARD } }] },
          scopeSpans: [
            {
              scope: { name: 'test' },
              spans: [
                span('eee19b7ec3c1b174', [{ key: 'gen_ai.conversation.id', value: { stringValue: LONE_CARD } }]),
                span('eee19b7ec3c1b175', [{ key: 'gen_ai.request.model', value: { stringValue: LONG_CARD } }]),
                span('eee19b7ec3c1b176', [{ key: 'gen_ai.input.messages', value: { stringValue: CARD } }], LONG_CARD),
                // Ids that are not hex: the message names the span and trace it rejects by their ids.
                span(CARD, [], 'chat', CARD),
              ],
            },
          ],
        },
      ],
    });
    const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body, route: 'otlp', headers: { 'Content-Type': 'application/json' } }));

    expect(response.statusCode).toBe(200);
    expect(JSON.parse(response.body)).toMatchObject({ partialSuccess: { rejectedSpans: '4' } });
    expect(response.body).toContain('span (invalid: a string of 34 characters) of trace (invalid: a string of 34 characters)');
    expect(quoted(response.body)).toEqual([]);
  });

  it.each([
    ['JSON', 'ingest', `{"traces":[{"input": ${CARD}}]}`],
    ['OTLP/JSON', 'otlp', `{"resourceSpans": ${CARD}}`],
  ] as const)('keeps it out of the 400 that refuses a %s body that is not JSON', async (_, route, body) => {
    const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body, route, headers: { 'Content-Type': 'application/json' } }));

    expect(response.statusCode).toBe(400);
    expect(response.body).toContain("not valid JSON (Unexpected token 'c')");
    expect(quoted(response.body)).toEqual([]);
  });
});
