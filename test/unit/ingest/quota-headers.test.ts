import { BatchGetItemCommand, TransactionCanceledException, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyResult } from 'aws-lambda';
import 'aws-sdk-client-mock-jest';
import { rateLimitHeaders } from '../../../lambda/ingest/core/rate/quota-headers.js';
import { createHarness, ddbMock, type Harness } from '../../support/ingest-harness.js';
import { buildBatch, buildTrace, gatewayEvent, NOW_MS } from '../../../devkit/builders/trace-builders.js';

// The harness's clock is 2026-11-22T12:00:00Z: every window resets at its full length except the month (8.5 days left of 30).
const POLICY = '"per-minute";q=1000;w=60, "per-hour";q=10000;w=3600, "per-day";q=100000;w=86400, "per-month";q=1000000;w=2592000';
const RESETS = { minute: 60, hour: 3600, day: 43_200, month: 734_400 };
const COUNTS = { 'minute#2026-11-22T12:00Z': 7, 'hour#2026-11-22T12Z': 70, 'day#2026-11-22': 700, '2026-11': 7000 } as Record<string, number>;

function counters(counts: Record<string, number> = COUNTS) {
  ddbMock.on(BatchGetItemCommand).callsFake((input: { RequestItems: Record<string, { Keys: { sk: { S: string } }[] }> }) => {
    const [table, request] = Object.entries(input.RequestItems)[0] as [string, { Keys: { sk: { S: string } }[] }];
    const items = request.Keys.map((key) => ({ sk: key.sk, count: { N: String(counts[key.sk.S] ?? counts[key.sk.S.replace('month#', '')] ?? 0) } }));
    return { Responses: { [table]: items } };
  });
}
const post = (h: Harness, payload: unknown, route?: 'otlp') =>
  h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify(payload), ...(route ? { route } : {}) }));
const header = (response: APIGatewayProxyResult, name: string) => response.headers?.[name];

describe('RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers-11)', () => {
  it('a 200 names each window\'s quota and length, and what is left and when it resets', async () => {
    const h = await createHarness();
    counters();
    const response = await post(h, buildBatch(2));
    expect(response.statusCode).toBe(200);
    expect(header(response, 'RateLimit-Policy')).toBe(POLICY);
    expect(header(response, 'RateLimit')).toBe(
      `"per-minute";r=993;t=${RESETS.minute}, "per-hour";r=9930;t=${RESETS.hour}, "per-day";r=99300;t=${RESETS.day}, "per-month";r=993000;t=${RESETS.month}`,
    );
    expect(ddbMock).toHaveReceivedCommandWith(BatchGetItemCommand, { RequestItems: { rate: expect.objectContaining({ ConsistentRead: false }) } });
  });

  it('a 429 carries them too, with the full window\'s exact count from the cancelled transaction', async () => {
    const h = await createHarness();
    counters({ ...COUNTS, 'minute#2026-11-22T12:00Z': 500 });
    ddbMock.on(TransactWriteItemsCommand).rejects(
      new TransactionCanceledException({
        message: 'cancelled',
        $metadata: {},
        CancellationReasons: [{ Code: 'ConditionalCheckFailed', Item: { count: { N: '999' } } }, { Code: 'None' }, { Code: 'None' }, { Code: 'None' }, { Code: 'None' }],
      }),
    );
    const response = await post(h, buildBatch(2));
    expect(response.statusCode).toBe(429);
    expect(header(response, 'RateLimit-Policy')).toBe(POLICY);
    expect(header(response, 'RateLimit')).toMatch(/^"per-minute";r=1;t=60, "per-hour";r=9930;t=3600, /);
    expect(header(response, 'Retry-After')).toBe('60');
  });

  it('a 429\'s detail gives the reset RateLimit gives, and says why Retry-After is another figure', async () => {
    const h = await createHarness();
    counters();
    ddbMock.on(TransactWriteItemsCommand).rejects(
      new TransactionCanceledException({ message: 'cancelled', $metadata: {}, CancellationReasons: [{ Code: 'None' }, { Code: 'None' }, { Code: 'None' }, { Code: 'ConditionalCheckFailed' }, { Code: 'None' }] }),
    );
    const response = await post(h, buildBatch(2));
    expect(header(response, 'Retry-After')).toBe('86400');
    expect(header(response, 'RateLimit')).toMatch(new RegExp(`"per-month";r=\\d+;t=${RESETS.month}$`));
    expect(JSON.parse(response.body).detail).toMatch(
      new RegExp(`Retry-After is 86400 s on every per-month refusal, as the API contract fixes it; the window itself resets in ${RESETS.month} s \\(t in RateLimit\\)$`),
    );
  });

  it('a 429 batch_exceeds_quota carries them too', async () => {
    const h = await createHarness({ quotas: { minute: 2 } });
    counters();
    const response = await post(h, buildBatch(3));
    expect(response.statusCode).toBe(429);
    expect(JSON.parse(response.body)).toMatchObject({ code: 'batch_exceeds_quota' });
    expect(header(response, 'RateLimit-Policy')).toMatch(/^"per-minute";q=2;w=60, /);
    expect(header(response, 'RateLimit')).toMatch(/^"per-minute";r=0;t=60, /);
  });

  it('lists only the windows that have a quota, and sends neither header when none has', async () => {
    let h = await createHarness({ quotas: { minute: null, hour: 50, day: null, month: null } });
    counters();
    let response = await post(h, buildBatch(1));
    expect(header(response, 'RateLimit-Policy')).toBe('"per-hour";q=50;w=3600');
    expect(header(response, 'RateLimit')).toBe('"per-hour";r=0;t=3600');

    h = await createHarness({ quotas: { minute: null, hour: null, day: null, month: null } });
    response = await post(h, buildBatch(1));
    expect(response.statusCode).toBe(200);
    expect(response.headers).not.toHaveProperty('RateLimit-Policy');
    expect(response.headers).not.toHaveProperty('RateLimit');
  });

  it('answers 200 with the policy but without RateLimit when the counters cannot be read', async () => {
    const h = await createHarness();
    ddbMock.on(BatchGetItemCommand).rejects(new Error('throttled'));
    const response = await post(h, buildBatch(1));
    expect(response.statusCode).toBe(200);
    expect(header(response, 'RateLimit-Policy')).toBe(POLICY);
    expect(response.headers).not.toHaveProperty('RateLimit');
  });

  it('a 200 whose every trace was rejected reports the windows, untouched', async () => {
    const h = await createHarness();
    counters();
    const response = await post(h, { traces: [buildTrace({ timestamp: 'yesterday' })] });
    expect(response.statusCode).toBe(200);
    expect(header(response, 'RateLimit')).toMatch(/^"per-minute";r=993;t=60, /);
    expect(ddbMock).not.toHaveReceivedCommand(TransactWriteItemsCommand);
  });

  it('the OTLP route\'s 429 carries them', async () => {
    const h = await createHarness({ quotas: { minute: 2 } });
    counters();
    const nanos = String(BigInt(NOW_MS - 1_000) * 1_000_000n);
    const span = (i: number) => ({ traceId: `${'ab'.repeat(15)}0${i}`, spanId: `${'cd'.repeat(7)}0${i}`, name: `step ${i}`, startTimeUnixNano: nanos, endTimeUnixNano: nanos });
    const response = await post(h, { resourceSpans: [{ scopeSpans: [{ spans: [span(1), span(2), span(3)] }] }] }, 'otlp');
    expect(response.statusCode).toBe(429);
    expect(header(response, 'RateLimit-Policy')).toMatch(/^"per-minute";q=2;w=60, /);
    expect(header(response, 'RateLimit')).toMatch(/^"per-minute";r=0;t=60, /);
  });

  it('the OTLP route\'s answers carry the same headers', async () => {
    const h = await createHarness();
    counters();
    const empty = await post(h, { resourceSpans: [] }, 'otlp');
    expect(empty.statusCode).toBe(200);
    expect(header(empty, 'RateLimit-Policy')).toBe(POLICY);
    expect(header(empty, 'RateLimit')).toMatch(/^"per-minute";r=993;t=60, /);
  });
});

describe('rateLimitHeaders', () => {
  it('writes Structured Field lists of strings with integer parameters', () => {
    expect(rateLimitHeaders([{ window: 'day', quota: 5, windowSeconds: 86_400, resetSeconds: 10, remaining: 0 }])).toEqual({
      'RateLimit-Policy': '"per-day";q=5;w=86400',
      RateLimit: '"per-day";r=0;t=10',
    });
    expect(rateLimitHeaders([])).toEqual({});
  });

  it('sends RateLimit only when what is left is known for every window, never a list with a gap', () => {
    const minute = { window: 'minute', quota: 100, windowSeconds: 60, resetSeconds: 30, remaining: 90 } as const;
    const hour = { window: 'hour', quota: 1_000, windowSeconds: 3_600, resetSeconds: 2_370 } as const;
    expect(rateLimitHeaders([minute, hour])).toEqual({ 'RateLimit-Policy': '"per-minute";q=100;w=60, "per-hour";q=1000;w=3600' });
  });
});
