import { GetObjectCommand, NoSuchKey, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { gzipSync } from 'node:zlib';
import { LandingBatchError, landRecords } from '../../../lambda/landing/land-records.js';
import { S3LandingStore } from '../../../lambda/landing/s3-landing-store.js';
import { encodeTraceRecord } from '../../../lambda/shared/domain/trace-record.js';
import { SHARD, acceptedSpan, acceptedTrace, inlineRecord, landingRecord, parquetRows, sequenceNumber, traceContext } from '../../../devkit/builders/landing-builders.js';

const s3Mock = mockClient(S3Client);
const deps = () => ({ store: new S3LandingStore(new S3Client({ region: 'us-east-1' }), 'data-bucket') });

function puts(): Map<string, Uint8Array> {
  return new Map(s3Mock.commandCalls(PutObjectCommand).map((call) => [call.args[0].input.Key!, call.args[0].input.Body as Uint8Array]));
}

const body = (bytes: Uint8Array) => ({ Body: { transformToByteArray: async () => bytes } }) as never;

beforeEach(() => {
  s3Mock.reset();
  s3Mock.on(PutObjectCommand).resolves({});
});

describe('landRecords', () => {
  it('writes one traces and one spans object per org, date and hour, keyed by the group first sequence number', async () => {
    const records = [
      inlineRecord(1, acceptedTrace({ timestamp: '2026-11-22T23:59:59.999999Z' }), traceContext({ org_id: 'org-a' })),
      inlineRecord(2, acceptedTrace({ timestamp: '2026-11-23T00:00:00.000000Z' }), traceContext({ org_id: 'org-a' })),
      inlineRecord(3, acceptedTrace(), traceContext({ org_id: 'org-b' })),
      inlineRecord(4, acceptedTrace({ timestamp: '2026-11-22T01:00:00.000000Z' }), traceContext({ org_id: 'org-a' })),
    ];

    const summary = await landRecords(deps(), records);

    expect([...puts().keys()].sort()).toEqual([
      `spans/org_id=org-a/dt=2026-11-22/hour=01/${SHARD}-${sequenceNumber(4)}.parquet`,
      `spans/org_id=org-a/dt=2026-11-22/hour=23/${SHARD}-${sequenceNumber(1)}.parquet`,
      `spans/org_id=org-a/dt=2026-11-23/hour=00/${SHARD}-${sequenceNumber(2)}.parquet`,
      `spans/org_id=org-b/dt=2026-11-22/hour=10/${SHARD}-${sequenceNumber(3)}.parquet`,
      `traces/org_id=org-a/dt=2026-11-22/hour=01/${SHARD}-${sequenceNumber(4)}.parquet`,
      `traces/org_id=org-a/dt=2026-11-22/hour=23/${SHARD}-${sequenceNumber(1)}.parquet`,
      `traces/org_id=org-a/dt=2026-11-23/hour=00/${SHARD}-${sequenceNumber(2)}.parquet`,
      `traces/org_id=org-b/dt=2026-11-22/hour=10/${SHARD}-${sequenceNumber(3)}.parquet`,
    ]);
    expect(s3Mock).toHaveReceivedCommandWith(PutObjectCommand, { Bucket: 'data-bucket', ContentType: 'application/vnd.apache.parquet' });
    expect(summary).toMatchObject({ recordsIn: 4, deadLettered: 0, rows: { traces: 4, spans: 8 }, objectsWritten: 8 });
    const groupA = await parquetRows(puts().get(`traces/org_id=org-a/dt=2026-11-22/hour=23/${SHARD}-${sequenceNumber(1)}.parquet`)!);
    expect(groupA.map((r) => r.timestamp)).toEqual([new Date('2026-11-22T23:59:59.999Z')]);
  });

  it('lands the spans of a spans-only record (an OTLP export without its root span) but no traces row for it', async () => {
    const records = [
      inlineRecord(1, acceptedTrace({ trace_id: 'with-root' }), traceContext()),
      inlineRecord(2, acceptedTrace({ trace_id: 'spans-only' }), traceContext({ spans_only: true })),
    ];
    const summary = await landRecords(deps(), records);
    expect(summary.rows).toEqual({ traces: 1, spans: 4 });
    const tracesKey = [...puts().keys()].find((key) => key.startsWith('traces/')) as string;
    const traces = await parquetRows(puts().get(tracesKey)!);
    expect(traces.map((row) => row.trace_id)).toEqual(['with-root']);
  });

  it('keeps span order and position, provenance columns and tags in the spans object', async () => {
    const trace = acceptedTrace({}, 0);
    trace.spans = [
      acceptedSpan({ name: 'first', attributes: '{"tags":["a","b"]}' }, 0),
      acceptedSpan({ name: 'second', attributes: '{}', parent_span_id: 'p', error_message: 'boom' }, 1),
    ];
    await landRecords(deps(), [inlineRecord(7, trace, traceContext({ api_key_id: 'key-9', request_id: 'req-9' }))]);

    const rows = await parquetRows(puts().get(`spans/org_id=org-a/dt=2026-11-22/hour=10/${SHARD}-${sequenceNumber(7)}.parquet`)!);
    expect(rows).toMatchObject([
      { trace_id: trace.trace_id, span_index: 0, name: 'first', tags: ['a', 'b'], parent_span_id: null, error_message: null, api_key_id: 'key-9', request_id: 'req-9', workspace_slug: 'ws', environment: 'production' },
      { trace_id: trace.trace_id, span_index: 1, name: 'second', tags: [], parent_span_id: 'p', error_message: 'boom' },
    ]);
  });

  it('reads tags the way validation does, escapes included', async () => {
    const trace = acceptedTrace({ attributes: '{"t\\u0061gs":["prod","\\u00e9t\\u00e9"]}' }, 1);
    trace.spans[0]!.attributes = '{"tags":["a\\"b"],"x":"tags"}';
    await landRecords(deps(), [inlineRecord(1, trace)]);

    const [traceRow] = await parquetRows(puts().get(`traces/org_id=org-a/dt=2026-11-22/hour=10/${SHARD}-${sequenceNumber(1)}.parquet`)!);
    const [spanRow] = await parquetRows(puts().get(`spans/org_id=org-a/dt=2026-11-22/hour=10/${SHARD}-${sequenceNumber(1)}.parquet`)!);
    expect(traceRow?.tags).toEqual(['prod', 'été']);
    expect(spanRow?.tags).toEqual(['a"b']);
  });

  it('lands copies of one record (same record_id) once, wherever they sit in the batch', async () => {
    const trace = acceptedTrace({}, 2);
    const context = traceContext({ record_id: 'req-1/0' });
    const other = acceptedTrace({}, 1);
    const records = [inlineRecord(1, trace, context), inlineRecord(2, other, traceContext({ record_id: 'req-1/1' })), inlineRecord(3, trace, context), inlineRecord(4, trace, context)];

    const summary = await landRecords(deps(), records);

    expect(summary).toMatchObject({ recordsIn: 4, duplicatesSkipped: 2, rows: { traces: 2, spans: 3 } });
    const rows = await parquetRows(puts().get(`traces/org_id=org-a/dt=2026-11-22/hour=10/${SHARD}-${sequenceNumber(1)}.parquet`)!);
    expect(rows.map((r) => r.trace_id)).toEqual([trace.trace_id, other.trace_id]);
  });

  it('collapses copies of an older record without record_id by request_id and trace_id', async () => {
    const trace = acceptedTrace({}, 1);
    const summary = await landRecords(deps(), [inlineRecord(1, trace), inlineRecord(2, trace), inlineRecord(3, trace, traceContext({ request_id: 'req-2' }))]);
    expect(summary).toMatchObject({ duplicatesSkipped: 1, rows: { traces: 2 } });
  });

  it('writes a batch larger than its memory bounds in parts, each keyed by its own first record, every row once', async () => {
    const records = Array.from({ length: 7 }, (_, i) => inlineRecord(i + 1, acceptedTrace({}, 3), traceContext({ record_id: `req-1/${i}` })));

    const summary = await landRecords({ ...deps(), maxPendingSpanRows: 6 }, records);

    expect(summary).toMatchObject({ rows: { traces: 7, spans: 21 }, objectsWritten: 8 });
    expect([...puts().keys()].filter((key) => key.startsWith('traces/')).sort()).toEqual(
      [1, 3, 5, 7].map((n) => `traces/org_id=org-a/dt=2026-11-22/hour=10/${SHARD}-${sequenceNumber(n)}.parquet`),
    );
    const landed = await Promise.all([...puts().entries()].filter(([key]) => key.startsWith('traces/')).map(([, bytes]) => parquetRows(bytes)));
    expect(landed.flat()).toHaveLength(7);
    expect(new Set(landed.flat().map((r) => r.trace_id)).size).toBe(7);
  });

  it('writes an empty spans object for a group without spans, so it replaces a larger earlier attempt', async () => {
    await landRecords(deps(), [inlineRecord(1, acceptedTrace({}, 0))]);

    const spans = puts().get(`spans/org_id=org-a/dt=2026-11-22/hour=10/${SHARD}-${sequenceNumber(1)}.parquet`);
    expect(spans).toBeDefined();
    expect(await parquetRows(spans!)).toEqual([]);
  });

  it('dead-letters undecodable records with the reason and lands the rest of the batch', async () => {
    const badTimestamp = acceptedTrace({ timestamp: 'yesterday' });
    const records = [
      landingRecord(1, Buffer.from('not gzip')),
      inlineRecord(2, acceptedTrace()),
      landingRecord(3, gzipSync(JSON.stringify({ v: 2, context: {}, trace: {} }))),
      inlineRecord(4, badTimestamp),
    ];

    const summary = await landRecords(deps(), records);

    expect(summary).toMatchObject({ deadLettered: 3, rows: { traces: 1, spans: 2 } });
    const letters = [...puts()].filter(([key]) => key.startsWith('dead-letter/'));
    expect(letters.map(([key]) => key)).toEqual([1, 3, 4].map((n) => `dead-letter/dt=2026-11-22/${SHARD}-${sequenceNumber(n)}.json`));
    const reasons = letters.map(([, bytes]) => JSON.parse(Buffer.from(bytes).toString('utf8')) as { reason: string; data_base64: string; sequence_number: string });
    expect(reasons[0]).toMatchObject({ reason: expect.stringContaining('neither gzip nor zstd'), data_base64: Buffer.from('not gzip').toString('base64'), sequence_number: sequenceNumber(1) });
    expect(reasons[1]!.reason).toContain('unsupported record version 2');
    expect(reasons[2]!.reason).toContain('/timestamp is not a UTC timestamp');
    expect(s3Mock).toHaveReceivedCommandWith(PutObjectCommand, { Key: `traces/org_id=org-a/dt=2026-11-22/hour=10/${SHARD}-${sequenceNumber(2)}.parquet` });
  });

  it('reads a trace carried by reference and lands it like an inline one', async () => {
    const trace = acceptedTrace({}, 3);
    const context = traceContext();
    s3Mock.on(GetObjectCommand, { Bucket: 'overflow-bucket', Key: 'overflow/t.json.gz' }).resolves(body(encodeTraceRecord({ v: 1, context, trace })));
    const pointer = encodeTraceRecord({ v: 1, context, ref: { bucket: 'overflow-bucket', key: 'overflow/t.json.gz', bytes: 10, trace_id: trace.trace_id } });

    const summary = await landRecords(deps(), [landingRecord(5, pointer)]);

    expect(summary.rows).toEqual({ traces: 1, spans: 3 });
    expect(s3Mock).toHaveReceivedCommandWith(GetObjectCommand, { Bucket: 'overflow-bucket', Key: 'overflow/t.json.gz' });
  });

  it('dead-letters a reference whose object does not exist', async () => {
    s3Mock.on(GetObjectCommand).rejects(new NoSuchKey({ message: 'gone', $metadata: {} }));
    const pointer = encodeTraceRecord({ v: 1, context: traceContext(), ref: { bucket: 'b', key: 'k', bytes: 1, trace_id: 't' } });

    const summary = await landRecords(deps(), [landingRecord(5, pointer)]);

    expect(summary.deadLettered).toBe(1);
  });

  it('fails the batch when a referenced object cannot be read for another reason', async () => {
    s3Mock.on(GetObjectCommand).rejects(Object.assign(new Error('slow down'), { name: 'SlowDown' }));
    const pointer = encodeTraceRecord({ v: 1, context: traceContext(), ref: { bucket: 'b', key: 'k', bytes: 1, trace_id: 't' } });

    await expect(landRecords(deps(), [landingRecord(5, pointer)])).rejects.toThrow('slow down');
    expect(s3Mock).not.toHaveReceivedCommand(PutObjectCommand);
  });

  it('fails the whole batch when one PutObject fails, after attempting every other write', async () => {
    const failing = `spans/org_id=org-b/dt=2026-11-22/hour=10/${SHARD}-${sequenceNumber(2)}.parquet`;
    s3Mock.on(PutObjectCommand, { Key: failing }).rejects(new Error('InternalError'));
    const records = [inlineRecord(1, acceptedTrace()), inlineRecord(2, acceptedTrace(), traceContext({ org_id: 'org-b' })), inlineRecord(3, acceptedTrace(), traceContext({ org_id: 'org-c' }))];

    const failure = await landRecords(deps(), records).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(LandingBatchError);
    expect((failure as LandingBatchError).failures.map((f) => f.key)).toEqual([failing]);
    expect(s3Mock).toHaveReceivedCommandTimes(PutObjectCommand, 6);
  });

  it.each([
    ['a PutObject timeout', Object.assign(new Error('socket timed out'), { name: 'TimeoutError' })],
    ['S3 throttling (503 SlowDown)', Object.assign(new Error('Please reduce your request rate.'), { name: 'SlowDown', $metadata: { httpStatusCode: 503 } })],
  ])('fails the whole batch on %s, so the event source mapping retries it and the retry overwrites the same keys', async (_, error) => {
    s3Mock.on(PutObjectCommand).rejectsOnce(error).resolves({});
    const records = [inlineRecord(1, acceptedTrace()), inlineRecord(2, acceptedTrace())];

    await expect(landRecords(deps(), records)).rejects.toBeInstanceOf(LandingBatchError);
    const keys = () => s3Mock.commandCalls(PutObjectCommand).map((c) => c.args[0].input.Key);
    const firstAttempt = keys().sort();
    await landRecords(deps(), records);
    const retry = keys().slice(firstAttempt.length).sort();
    expect(retry).toEqual(firstAttempt);
  });
});
