import { gunzipSync, gzipSync } from 'node:zlib';
import { GetItemCommand, TransactionCanceledException, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { ProvisionedThroughputExceededException, PutRecordsCommand } from '@aws-sdk/client-kinesis';
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { APIGatewayProxyResult } from 'aws-lambda';
import 'aws-sdk-client-mock-jest';
import { MAX_DECODED_BODY_BYTES } from '../../../lambda/shared/request-limits.js';
import { decodeTraceRecord, type InlineTraceRecord, type TraceReferenceRecord } from '../../../lambda/shared/domain/trace-record.js';
import { createHarness, ddbMock, type Harness, kinesisMock, publishedRecords, s3Mock, TEST_POLICY } from '../../support/ingest-harness.js';
import { outsideDayOfClockMessage } from '../../../lambda/ingest/core/validation/timestamps.js';
import { buildBatch, buildSpan, buildTrace, gatewayEvent, iso, NOW_MICROS } from '../../../devkit/builders/trace-builders.js';

const body = (response: APIGatewayProxyResult) => JSON.parse(response.body) as Record<string, unknown>;
const post = (h: Harness, payload: unknown, options: Parameters<typeof gatewayEvent>[0] = {}) =>
  h.invoke(gatewayEvent({ apiKey: h.orgKey, body: typeof payload === 'string' ? payload : JSON.stringify(payload), ...options }));

/** Text that gzip cannot shrink much (~82%): printable ASCII but for `"` and `\\`, so JSON keeps it as it is. */
function incompressibleText(length: number): string {
  const alphabet = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).filter((c) => c !== '"' && c !== '\\');
  return Array.from({ length }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join('');
}

function expectNoCounterTouched() {
  expect(ddbMock).not.toHaveReceivedCommand(TransactWriteItemsCommand);
}
function expectNothingPublished() {
  expect(kinesisMock).not.toHaveReceivedCommand(PutRecordsCommand);
}
function cancelled(codes: string[]) {
  return new TransactionCanceledException({
    message: 'Transaction cancelled',
    $metadata: {},
    CancellationReasons: codes.map((Code) => ({ Code })),
  });
}

describe('POST /v1/traces/ingest, in the order of docs/contract.md §1', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await createHarness();
  });

  describe('1. API key (401)', () => {
    it.each([
      ['missing', undefined],
      ['malformed', 'not-a-key'],
      ['unknown', `tik_${'A'.repeat(43)}`],
    ])('answers 401 when the key is %s and touches no counter', async (_, apiKey) => {
      const response = await h.invoke(gatewayEvent({ apiKey, body: JSON.stringify(buildBatch(1)) }));
      expect(response.statusCode).toBe(401);
      expect(body(response)).toMatchObject({ code: 'invalid_api_key', detail: expect.stringMatching(/^Invalid or missing API key/) });
      expectNoCounterTouched();
      expectNothingPublished();
    });

    it('answers 401 for a revoked key', async () => {
      const response = await h.invoke(gatewayEvent({ apiKey: h.revokedKey, body: JSON.stringify(buildBatch(1)) }));
      expect(response.statusCode).toBe(401);
      expect(body(response).detail).toMatch(/unknown or revoked/);
    });

    it('does not read DynamoDB for a malformed key', async () => {
      await h.invoke(gatewayEvent({ apiKey: 'x', body: '{}' }));
      expect(ddbMock).not.toHaveReceivedCommand(GetItemCommand);
    });

    it('answers 401 when two different X-API-Key headers are sent', async () => {
      const response = await h.invoke(gatewayEvent({ apiKey: [h.orgKey, h.workspaceKey], body: JSON.stringify(buildBatch(1)) }));
      expect(response.statusCode).toBe(401);
      expect(body(response).detail).toMatch(/exactly one X-API-Key/);
    });

    it('accepts the same key repeated', async () => {
      const response = await h.invoke(gatewayEvent({ apiKey: [h.orgKey, h.orgKey], body: JSON.stringify(buildBatch(1)) }));
      expect(response.statusCode).toBe(200);
    });

    it('answers 401 before looking at a broken body', async () => {
      const response = await h.invoke(gatewayEvent({ body: '{' }));
      expect(response.statusCode).toBe(401);
    });
  });

  it('2. answers 403 "Organization has no active plan" when the plan is inactive, even with a billing issue', async () => {
    h = await createHarness({ planStatus: 'inactive', billingStatus: 'past_due' });
    const response = await post(h, buildBatch(1));
    expect(response.statusCode).toBe(403);
    expect(body(response)).toMatchObject({ code: 'no_active_plan', detail: expect.stringMatching(/^Organization has no active plan/) });
    expectNoCounterTouched();
  });

  it('3. answers 402 "Payment required" on a billing issue', async () => {
    h = await createHarness({ billingStatus: 'past_due' });
    const response = await post(h, buildBatch(1));
    expect(response.statusCode).toBe(402);
    expect(body(response)).toMatchObject({ code: 'payment_required', detail: expect.stringMatching(/^Payment required/) });
    expectNoCounterTouched();
  });

  describe('4. size (413)', () => {
    it('answers 413 batch_too_large, saying to split, when the gunzipped body is over the 4 MiB ceiling, without inflating it all', async () => {
      const bomb = Buffer.alloc(MAX_DECODED_BODY_BYTES + 1, 0x20);
      const response = await post(h, '', { body: bomb, gzip: true });
      expect(response.statusCode).toBe(413);
      expect(response.headers?.['Retry-After']).toBeUndefined();
      expect(body(response)).toMatchObject({ code: 'batch_too_large', detail: expect.stringMatching(/^Request body too large.*split the batch.*cannot succeed/) });
      expectNoCounterTouched();
    });

    it('takes a body of exactly the ceiling, plain or gzip', async () => {
      const batch = JSON.stringify(buildBatch(1));
      const padded = batch + ' '.repeat(MAX_DECODED_BODY_BYTES - Buffer.byteLength(batch));
      expect(Buffer.byteLength(padded)).toBe(MAX_DECODED_BODY_BYTES);
      expect((await post(h, padded)).statusCode).toBe(200);
      expect((await post(h, '', { body: Buffer.from(padded), gzip: true })).statusCode).toBe(200);
      expect((await post(h, `${padded} `)).statusCode).toBe(413);
    });

    it('answers 413 before 400: an oversized body that is not JSON', async () => {
      const response = await post(h, '', { body: Buffer.alloc(21 * 1024 * 1024, 0x7b), gzip: true });
      expect(response.statusCode).toBe(413);
    });
  });

  describe('5. malformed body (400)', () => {
    it.each([
      ['not JSON', '{"traces": [', /not valid JSON/],
      ['not an object', '[1,2]', /must be a JSON object/],
      ['traces missing', '{}', /"traces" is missing/],
      ['traces null', '{"traces": null}', /"traces" is missing/],
      ['traces not an array', '{"traces": {}}', /must be an array/],
      ['traces empty', '{"traces": []}', /is empty/],
      ['no body', '', /no body/],
    ])('answers 400 when the body is %s', async (_, text, detail) => {
      const response = await post(h, text);
      expect(response.statusCode).toBe(400);
      expect(body(response)).toMatchObject({ code: 'malformed_body', detail: expect.stringMatching(detail) });
      expectNoCounterTouched();
    });

    it('answers 400 for 501 traces and accepts 500', async () => {
      const trace = buildTrace({}, 0);
      const over = await post(h, { traces: Array.from({ length: 501 }, () => ({ ...trace, trace_id: null })) });
      expect(over.statusCode).toBe(400);
      expect(body(over).detail).toMatch(/501 items, more than the limit of 500/);
      const full = await post(h, { traces: Array.from({ length: 500 }, () => ({ ...trace, trace_id: null })) });
      expect(full.statusCode).toBe(200);
      expect(body(full).accepted).toBe(500);
    });

    it('answers 400 for broken gzip', async () => {
      const broken = gzipSync(JSON.stringify(buildBatch(2))).subarray(0, 40);
      const response = await h.invoke(
        gatewayEvent({ apiKey: h.orgKey, body: broken, headers: { 'Content-Encoding': 'gzip' } }),
      );
      expect(response.statusCode).toBe(400);
      expect(body(response).detail).toMatch(/not valid gzip/);
    });

    it('answers 400 for an unsupported Content-Encoding', async () => {
      const response = await post(h, buildBatch(1), { headers: { 'Content-Encoding': 'br' } });
      expect(response.statusCode).toBe(400);
      expect(body(response).detail).toMatch(/Content-Encoding 'br' is not supported/);
    });

    it('answers 400 for bytes that are not UTF-8', async () => {
      const response = await post(h, '', { body: Buffer.from([0x7b, 0xff, 0xfe, 0x7d]) });
      expect(response.statusCode).toBe(400);
      expect(body(response).detail).toMatch(/UTF-8/);
    });
  });

  describe('6–7. workspace scope', () => {
    it('6. answers 400 naming workspace_slug and the index when a workspace key sends a trace without one', async () => {
      const traces = [buildTrace({ workspace_slug: 'research' }), buildTrace({ workspace_slug: null })];
      const response = await post(h, { traces }, { apiKey: h.workspaceKey });
      expect(response.statusCode).toBe(400);
      expect(body(response)).toMatchObject({ code: 'workspace_required', detail: expect.stringMatching(/workspace_slug.*trace 1/) });
      expectNoCounterTouched();
    });

    it.each([[''], [5], [undefined]])('6. treats workspace_slug %p as missing for a workspace key', async (slug) => {
      const response = await post(h, { traces: [buildTrace({ workspace_slug: slug })] }, { apiKey: h.workspaceKey });
      expect(response.statusCode).toBe(400);
    });

    it('6 comes before 7: a missing slug after an out-of-scope one is still 400', async () => {
      const traces = [buildTrace({ workspace_slug: 'support' }), buildTrace({ workspace_slug: '' })];
      const response = await post(h, { traces }, { apiKey: h.workspaceKey });
      expect(response.statusCode).toBe(400);
    });

    it('7. answers 403 when a workspace key targets another workspace', async () => {
      const response = await post(h, { traces: [buildTrace({ workspace_slug: 'support' })] }, { apiKey: h.workspaceKey });
      expect(response.statusCode).toBe(403);
      expect(body(response)).toMatchObject({
        code: 'workspace_out_of_scope',
        detail: expect.stringMatching(/workspace_slug 'support' is not in the API key scope/),
      });
      expectNoCounterTouched();
    });

    it('7. answers 403 when an org key names a workspace the organization does not have', async () => {
      const response = await post(h, { traces: [buildTrace({ workspace_slug: 'research' }), buildTrace({ workspace_slug: 'nope' })] });
      expect(response.statusCode).toBe(403);
      expect(body(response).detail).toMatch(/'nope' is not in the API key scope/);
    });

    it('accepts an org key with an existing workspace or none, and a workspace key in its own workspace', async () => {
      expect((await post(h, { traces: [buildTrace({ workspace_slug: 'support' }), buildTrace()] })).statusCode).toBe(200);
      const own = await post(h, { traces: [buildTrace({ workspace_slug: 'research' })] }, { apiKey: h.workspaceKey });
      expect(own.statusCode).toBe(200);
      expect(publishedRecords().at(-1)?.context.workspace_slug).toBe('research');
    });
  });

  describe('8. per-trace validation', () => {
    it('answers 200 with the invalid traces in errors, in index order, and publishes the valid ones', async () => {
      const traces = [
        buildTrace(),
        buildTrace({ trace_id: 'abc', timestamp: iso(25 * 3600 * 1000) }),
        buildTrace({ spans: [buildSpan({ kind: 'robot' })] }),
      ];
      const response = await post(h, { traces });
      expect(response.statusCode).toBe(200);
      expect(body(response)).toEqual({
        accepted: 1,
        rejected: 2,
        errors: [
          {
            index: 1,
            trace_id: 'abc',
            issues: [
              { path: '/trace_id', code: 'invalid_uuid', message: expect.any(String) },
              { path: '/timestamp', code: 'timestamp_out_of_range', message: outsideDayOfClockMessage(NOW_MICROS) },
            ],
          },
          {
            index: 2,
            trace_id: traces[2]?.trace_id,
            issues: [{ path: '/spans/0/kind', code: 'invalid_enum', message: 'must be one of llm, tool, chain, retriever, agent, custom' }],
          },
        ],
      });
      expect(publishedRecords()).toHaveLength(1);
      const [transaction] = ddbMock.commandCalls(TransactWriteItemsCommand);
      expect(transaction?.args[0].input.TransactItems?.[0]?.Update?.ExpressionAttributeValues?.[':n']).toEqual({ N: '1' });
    });

    it('refuses a trace_id repeated within the batch as duplicate_trace_id, case-insensitively, keeping the first', async () => {
      const id = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee';
      const traces = [buildTrace({ trace_id: id }), buildTrace({ trace_id: id.toUpperCase() }), buildTrace({ trace_id: id, root_span_name: 'other' })];
      const response = await post(h, { traces });
      expect(body(response)).toMatchObject({
        accepted: 1,
        rejected: 2,
        errors: [
          { index: 1, trace_id: id.toUpperCase(), issues: [{ path: '/trace_id', code: 'duplicate_trace_id', message: expect.stringMatching(/trace 0/) }] },
          { index: 2, trace_id: id, issues: [{ path: '/trace_id', code: 'duplicate_trace_id', message: expect.any(String) }] },
        ],
      });
      expect(publishedRecords().map((r) => r.trace.root_span_name)).toEqual([traces[0]?.root_span_name]);
    });

    it('applies the same rule to traces carried by reference: two large traces with one trace_id never share an object', async () => {
      const random = () => JSON.stringify(incompressibleText(1_250_000));
      const id = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee';
      const other = 'aaaaaaaa-bbbb-4ccc-8ddd-ffffffffffff';
      const traces = [id, id, other].map((trace_id) => buildTrace({ trace_id, spans: [buildSpan({ input: random() })] }));
      const response = await post(h, { traces });
      expect(body(response)).toMatchObject({ accepted: 2, rejected: 1, errors: [{ index: 1, issues: [{ code: 'duplicate_trace_id' }] }] });
      const keys = s3Mock.commandCalls(PutObjectCommand).map((call) => call.args[0].input.Key);
      expect(keys).toEqual([expect.stringMatching(new RegExp(`/0-${id}\\.json\\.gz$`)), expect.stringMatching(new RegExp(`/2-${other}\\.json\\.gz$`))]);
    });

    it('touches no counter and publishes nothing when no trace is valid', async () => {
      const response = await post(h, { traces: [{}, 5, buildTrace({ status: 'OK' })] });
      expect(response.statusCode).toBe(200);
      expect(body(response)).toMatchObject({ accepted: 0, rejected: 3 });
      expectNoCounterTouched();
      expectNothingPublished();
    });
  });

  describe('9. rate windows (429)', () => {
    it('increments the four windows by the accepted count in one transaction with conditions', async () => {
      await post(h, buildBatch(3));
      const calls = ddbMock.commandCalls(TransactWriteItemsCommand);
      expect(calls).toHaveLength(1);
      const items = calls[0]?.args[0].input.TransactItems ?? [];
      expect(items.map((item) => item.Update?.Key?.sk?.S ?? item.Put?.Item?.sk?.S)).toEqual([
        'minute#2026-11-22T12:00Z',
        'hour#2026-11-22T12Z',
        'day#2026-11-22',
        'month#2026-11',
        expect.stringMatching(/^reservation#/),
      ]);
      expect(items[4]?.Put?.ConditionExpression).toBe('attribute_not_exists(pk)');
      for (const item of items.slice(0, 4)) {
        expect(item.Update?.ConditionExpression).toBe('attribute_not_exists(#count) OR #count <= :room');
        expect(item.Update?.ExpressionAttributeValues?.[':n']).toEqual({ N: '3' });
      }
      expect(items[0]?.Update?.ExpressionAttributeValues?.[':room']).toEqual({ N: '997' });
    });

    it.each([
      [['None', 'None', 'None', 'ConditionalCheckFailed'], 'month', '86400'],
      [['ConditionalCheckFailed', 'None', 'None', 'None'], 'minute', '60'],
      [['None', 'ConditionalCheckFailed', 'None', 'None'], 'hour', '3600'],
      [['ConditionalCheckFailed', 'None', 'ConditionalCheckFailed', 'None'], 'day', '86400'],
    ])('maps cancellation reasons %p to a 429 for the %s window with Retry-After %s, and publishes nothing', async (codes, window, retryAfter) => {
      ddbMock.on(TransactWriteItemsCommand).rejects(cancelled(codes));
      const response = await post(h, buildBatch(2));
      expect(response.statusCode).toBe(429);
      expect(response.headers?.['Retry-After']).toBe(retryAfter);
      expect(body(response)).toMatchObject({ code: 'rate_limited', window, detail: expect.stringMatching(/^Rate limit exceeded/) });
      expect(ddbMock).toHaveReceivedCommandTimes(TransactWriteItemsCommand, 1);
      expectNothingPublished();
    });

    it('says what is used and left when DynamoDB returns the full window\'s count, and adds used, remaining, requested', async () => {
      const full = new TransactionCanceledException({
        message: 'Transaction cancelled',
        $metadata: {},
        CancellationReasons: [{ Code: 'ConditionalCheckFailed', Item: { count: { N: '999' } } }, { Code: 'None' }, { Code: 'None' }, { Code: 'None' }],
      });
      ddbMock.on(TransactWriteItemsCommand).rejects(full);
      const response = await post(h, buildBatch(2));
      expect(body(response)).toMatchObject({ window: 'minute', limit: 1000, used: 999, remaining: 1, requested: 2 });
      expect(body(response).detail).toMatch(/^Rate limit exceeded: the per-minute quota is 1000 traces; 999 are used and 1 left, and this batch needs 2\./);
    });

    it('answers 429 batch_exceeds_quota without a transaction when the batch alone exceeds a window quota, and says to split it', async () => {
      h = await createHarness({ quotas: { minute: 2 } });
      const response = await post(h, buildBatch(3));
      expect(response.statusCode).toBe(429);
      expect(response.headers?.['Retry-After']).toBe('60');
      expect(body(response)).toMatchObject({ code: 'batch_exceeds_quota', window: 'minute', limit: 2, detail: expect.stringMatching(/larger than the whole per-minute quota of 2; split the batch/) });
      expectNoCounterTouched();
    });

    it('skips windows without a quota and sends no transaction when all are unlimited', async () => {
      h = await createHarness({ quotas: { minute: null, hour: null, day: null, month: null } });
      expect((await post(h, buildBatch(2))).statusCode).toBe(200);
      expectNoCounterTouched();
    });
  });

  describe('10. dependencies failing (503)', () => {
    it('retries transaction conflicts with bounded attempts, then answers 503 with Retry-After and publishes nothing', async () => {
      ddbMock.on(TransactWriteItemsCommand).rejects(cancelled(['TransactionConflict', 'None', 'None', 'None', 'None']));
      const response = await post(h, buildBatch(2));
      expect(response.statusCode).toBe(503);
      expect(response.headers?.['Retry-After']).toBeDefined();
      expect(body(response)).toMatchObject({ code: 'unavailable', detail: expect.stringMatching(/^Service temporarily unavailable/) });
      // The reserve's attempts, then the (conditional) give-back's.
      expect(ddbMock).toHaveReceivedCommandTimes(TransactWriteItemsCommand, 2 * TEST_POLICY.maxAttempts);
      expectNothingPublished();
    });

    it('succeeds when a conflict clears on retry, with a new token after the definite cancellation', async () => {
      ddbMock.on(TransactWriteItemsCommand).rejectsOnce(cancelled(['None', 'TransactionConflict', 'None', 'None'])).resolves({});
      expect((await post(h, buildBatch(2))).statusCode).toBe(200);
      const tokens = ddbMock.commandCalls(TransactWriteItemsCommand).map((c) => c.args[0].input.ClientRequestToken);
      expect(tokens).toHaveLength(2);
      expect(tokens[0]).not.toBe(tokens[1]);
    });

    it('keeps the same token when the outcome of an attempt is unknown', async () => {
      ddbMock.on(TransactWriteItemsCommand).rejectsOnce(Object.assign(new Error('socket hang up'), { name: 'TimeoutError' })).resolves({});
      expect((await post(h, buildBatch(1))).statusCode).toBe(200);
      const tokens = ddbMock.commandCalls(TransactWriteItemsCommand).map((c) => c.args[0].input.ClientRequestToken);
      expect(tokens[0]).toBe(tokens[1]);
    });

    it('keeps the increments and answers a 503 that says the batch may have been accepted when Kinesis keeps timing out', async () => {
      kinesisMock.on(PutRecordsCommand).rejects(Object.assign(new Error('socket timed out'), { name: 'TimeoutError' }));
      const response = await post(h, buildBatch(3));
      expect(response.statusCode).toBe(503);
      expect(response.headers?.['Retry-After']).toBe('5');
      expect(body(response)).toMatchObject({ code: 'unavailable', may_have_been_accepted: true, detail: expect.stringMatching(/may have been accepted.*same Idempotency-Key/) });
      expect(body(response).detail).not.toMatch(/nothing was accepted/);
      expect(ddbMock.commandCalls(TransactWriteItemsCommand)).toHaveLength(1);
    });

    it('gives the increments back and answers 503 when Kinesis keeps failing', async () => {
      kinesisMock.on(PutRecordsCommand).rejects(new ProvisionedThroughputExceededException({ message: 'throttled', $metadata: { httpStatusCode: 400 } }));
      const response = await post(h, buildBatch(3));
      expect(response.statusCode).toBe(503);
      expect(body(response)).toMatchObject({ detail: expect.stringMatching(/nothing was accepted/) });
      const calls = ddbMock.commandCalls(TransactWriteItemsCommand);
      expect(calls).toHaveLength(2);
      const release = calls[1]?.args[0].input.TransactItems ?? [];
      expect(release).toHaveLength(5);
      // Only an applied reservation is given back: the marker must exist and goes with it.
      expect(release[0]?.Delete).toMatchObject({ Key: { sk: { S: expect.stringMatching(/^reservation#/) } }, ConditionExpression: 'attribute_exists(pk)' });
      for (const item of release.slice(1)) {
        expect(item.Update?.UpdateExpression).toBe('ADD #count :minus');
        expect(item.Update?.ExpressionAttributeValues?.[':minus']).toEqual({ N: '-3' });
        expect(item.Update?.ConditionExpression).toBeUndefined();
      }
    });

    it('answers 503, not 500, when the tenancy table cannot be read', async () => {
      ddbMock.on(GetItemCommand).rejects(new Error('connection reset'));
      const response = await post(h, buildBatch(1));
      expect(response.statusCode).toBe(503);
      expect(response.body).not.toMatch(/connection reset/);
    });
  });

  describe('publishing', () => {
    it('resends only the entries that failed in a partially failed PutRecords', async () => {
      kinesisMock
        .on(PutRecordsCommand)
        .resolvesOnce({
          FailedRecordCount: 2,
          Records: [
            { SequenceNumber: '1', ShardId: 's' },
            { ErrorCode: 'ProvisionedThroughputExceededException', ErrorMessage: 'slow down' },
            { SequenceNumber: '3', ShardId: 's' },
            { ErrorCode: 'InternalFailure', ErrorMessage: 'oops' },
          ],
        })
        .resolves({ FailedRecordCount: 0, Records: [{ SequenceNumber: '5' }, { SequenceNumber: '6' }] });
      const batch = buildBatch(4);
      const response = await post(h, batch);
      expect(response.statusCode).toBe(200);
      const calls = kinesisMock.commandCalls(PutRecordsCommand);
      expect(calls).toHaveLength(2);
      const first = calls[0]?.args[0].input.Records ?? [];
      const second = calls[1]?.args[0].input.Records ?? [];
      expect(second).toEqual([first[1], first[3]]);
    });

    it('publishes records that decode to exactly the accepted traces with their server context', async () => {
      const batch = buildBatch(2, { workspace_slug: 'support', trace_id: null });
      batch.traces[1] = { ...batch.traces[1], trace_id: 'AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE', environment: null, attributes: '' };
      const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify(batch), requestId: 'req-1' }));
      expect(response.headers?.['X-Request-Id']).toBe('req-1');
      const records = publishedRecords();
      expect(records).toHaveLength(2);
      const [first, second] = records as [InlineTraceRecord, InlineTraceRecord];
      expect(first.context).toEqual({
        org_id: 'acme',
        workspace_slug: 'support',
        api_key_id: expect.stringMatching(/^key_/),
        request_id: 'req-1',
        received_at: '2026-11-22T12:00:00.000000Z',
        record_id: 'req-1/0',
      });
      expect(second.context.record_id).toBe('req-1/1');
      expect(first.trace.trace_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(second.trace).toMatchObject({ trace_id: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee', environment: 'default', attributes: '{}' });
      expect(second.trace.spans[1]?.timestamp).toBe('2026-11-22T12:00:00.010000Z');
      const partitionKeys = kinesisMock.commandCalls(PutRecordsCommand)[0]?.args[0].input.Records?.map((r) => r.PartitionKey);
      // The request's traces travel together: one shard, so one landed object per dataset (PartitionChunks).
      expect(partitionKeys).toEqual(['req-1#0', 'req-1#0']);
    });

    it('carries a trace too large for one record by reference through S3', async () => {
      const huge = 'x'.repeat(2_500_000);
      const random = incompressibleText(1_300_000);
      const trace = buildTrace({ spans: [buildSpan({ input: JSON.stringify(huge), output: JSON.stringify(random) })] });
      const response = await post(h, { traces: [trace] });
      expect(response.statusCode).toBe(200);
      expect(s3Mock).toHaveReceivedCommandTimes(PutObjectCommand, 1);
      const put = s3Mock.commandCalls(PutObjectCommand)[0]?.args[0].input;
      const [pointer] = kinesisMock.commandCalls(PutRecordsCommand)[0]?.args[0].input.Records ?? [];
      const record = decodeTraceRecord(pointer?.Data as Uint8Array) as TraceReferenceRecord;
      expect(record.ref).toMatchObject({ bucket: 'data-bucket', key: put?.Key, trace_id: String(trace.trace_id) });
      expect(put?.Key).toMatch(/^overflow\/org_id=acme\/dt=2026-11-22\//);
      const stored = JSON.parse(gunzipSync(put?.Body as Uint8Array).toString()) as InlineTraceRecord;
      expect(stored.trace.spans[0]?.output).toBe(JSON.stringify(random));
    });

    describe('a large trace the publish refused leaves no overflow object (issue 38)', () => {
      const large = () => buildTrace({ spans: [buildSpan({ output: JSON.stringify(incompressibleText(1_300_000)) })] });
      const throttled = () => new ProvisionedThroughputExceededException({ message: 'throttled', $metadata: { httpStatusCode: 400 } });

      it('deletes the object when nothing was accepted', async () => {
        kinesisMock.on(PutRecordsCommand).rejects(throttled());
        const response = await post(h, { traces: [large()] });
        expect(response.statusCode).toBe(503);
        expect(body(response)).toMatchObject({ detail: expect.stringMatching(/nothing was accepted/) });
        const key = s3Mock.commandCalls(PutObjectCommand)[0]?.args[0].input.Key;
        expect(key).toMatch(/^overflow\//);
        expect(s3Mock).toHaveReceivedCommandTimes(DeleteObjectCommand, 1);
        expect(s3Mock).toHaveReceivedCommandWith(DeleteObjectCommand, { Bucket: 'data-bucket', Key: key });
      });

      it('keeps the object when the batch may have been accepted', async () => {
        kinesisMock.on(PutRecordsCommand).rejects(Object.assign(new Error('socket timed out'), { name: 'TimeoutError' }));
        const response = await post(h, { traces: [large()] });
        expect(body(response)).toMatchObject({ may_have_been_accepted: true });
        expect(s3Mock).toHaveReceivedCommandTimes(PutObjectCommand, 1);
        expect(s3Mock).not.toHaveReceivedCommand(DeleteObjectCommand);
      });

      it('answers the same 503 when the delete fails', async () => {
        kinesisMock.on(PutRecordsCommand).rejects(throttled());
        const trace = large();
        const cleaned = await post(h, { traces: [trace] });
        s3Mock.on(DeleteObjectCommand).rejects(Object.assign(new Error('Access Denied'), { name: 'AccessDenied' }));
        const leftBehind = await post(h, { traces: [trace] });
        expect(s3Mock).toHaveReceivedCommandTimes(DeleteObjectCommand, 2);
        // The request id is each request's own; everything else is the answer.
        const answer = (response: APIGatewayProxyResult) => ({ status: response.statusCode, retryAfter: response.headers?.['Retry-After'], body: { ...body(response), request_id: undefined } });
        expect(answer(leftBehind)).toEqual(answer(cleaned));
      });
    });
  });

  describe('transport', () => {
    it('accepts a gzip body delivered base64-encoded, as API Gateway sends binary bodies', async () => {
      const response = await post(h, JSON.stringify(buildBatch(3)), { gzip: true });
      expect(response.statusCode).toBe(200);
      expect(body(response)).toMatchObject({ accepted: 3, rejected: 0, errors: [] });
    });

    it('accepts a gzip body whose Content-Encoding header was lost', async () => {
      const response = await post(h, '', { body: gzipSync(JSON.stringify(buildBatch(1))) });
      expect(response.statusCode).toBe(200);
    });

    it('ignores a leading byte-order mark', async () => {
      const response = await post(h, `\ufeff${JSON.stringify(buildBatch(1))}`);
      expect(response.statusCode).toBe(200);
    });

    it('answers every status with JSON, a detail, a code and X-Request-Id', async () => {
      for (const response of [await post(h, '{'), await h.invoke(gatewayEvent({ body: '{}' }))]) {
        expect(response.headers?.['Content-Type']).toBe('application/json');
        expect(response.headers?.['X-Request-Id']).toBeTruthy();
        expect(body(response)).toEqual(expect.objectContaining({ detail: expect.any(String), code: expect.any(String) }));
      }
    });
  });
});
