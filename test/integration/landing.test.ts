import path from 'node:path';
import { GetRecordsCommand, GetShardIteratorCommand, PutRecordsCommand } from '@aws-sdk/client-kinesis';
import { DeleteObjectsCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import type { KinesisStreamEvent } from 'aws-lambda';
import { compactPending } from '../../lambda/compaction/compact-pending.js';
import { S3LakeStore } from '../../lambda/lake/s3-lake-store.js';
import { landRecords } from '../../lambda/landing/land-records.js';
import type { LandingRecord } from '../../lambda/landing/landing-types.js';
import type { LandingStore } from '../../lambda/landing/ports.js';
import { S3LandingStore } from '../../lambda/landing/s3-landing-store.js';
import type { AcceptedTrace, TraceContext } from '../../lambda/shared/domain/trace.js';
import { encodeTraceRecord } from '../../lambda/shared/domain/trace-record.js';
import { replayRange } from '../../scripts/replay/replay-range.js';
import { useEngineSuite } from '../support/engine-suite.js';
import { acceptedSpan, acceptedTrace, kinesisEvent, traceContext } from '../../devkit/builders/landing-builders.js';

/**
 * The landing consumer against kinesalite and s3rver: records published to a real stream, read back
 * with their real shard ids and sequence numbers, landed by the exported handler, and every object
 * read back by DuckDB.
 */
describe('landing against kinesalite and s3rver, read back with DuckDB', () => {
  const bucket = 'data';
  const stream = 'traces';
  const engines = useEngineSuite({ stream: { name: stream }, bucket, duckdb: true });
  const { query } = engines;
  const download = engines.downloadBucket;
  let handler: (event: KinesisStreamEvent) => Promise<void>;

  beforeAll(async () => {
    Object.assign(process.env, {
      DATA_BUCKET: bucket,
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ENDPOINT_URL_S3: engines.endpoints.s3,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
    });
    ({ handler } = await import('../../lambda/landing/handler.js'));
  });

  beforeEach(async () => {
    const { Contents = [] } = await engines.s3.send(new ListObjectsV2Command({ Bucket: bucket }));
    if (Contents.length > 0) await engines.s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: Contents.map((o) => ({ Key: o.Key! })) } }));
  });

  /** Publishes records and reads them back from the stream with their real shard and sequence numbers. */
  async function publish(datas: Uint8Array[]): Promise<LandingRecord[]> {
    const put = await engines.kinesis.send(new PutRecordsCommand({ StreamName: stream, Records: datas.map((Data, i) => ({ Data, PartitionKey: `pk-${i}` })) }));
    const first = put.Records![0]!;
    const { ShardIterator } = await engines.kinesis.send(
      new GetShardIteratorCommand({ StreamName: stream, ShardId: first.ShardId!, ShardIteratorType: 'AT_SEQUENCE_NUMBER', StartingSequenceNumber: first.SequenceNumber! }),
    );
    const { Records = [] } = await engines.kinesis.send(new GetRecordsCommand({ ShardIterator, Limit: datas.length }));
    return Records.map((r) => ({ shardId: first.ShardId!, sequenceNumber: r.SequenceNumber!, data: r.Data!, approximateArrivalTimestamp: r.ApproximateArrivalTimestamp! }));
  }

  const dataset = (dir: string, name: 'traces' | 'spans') => `read_parquet('${dir}/${name}/**/*.parquet', hive_partitioning = true)`;

  async function expectOneCopyOfEach(traces: AcceptedTrace[], root = ''): Promise<void> {
    const { dir: bucketDir } = await download();
    const dir = path.join(bucketDir, root);
    const traceRows = await query(`SELECT trace_id, count(*)::INTEGER AS n FROM ${dataset(dir, 'traces')} GROUP BY trace_id ORDER BY trace_id`);
    expect(traceRows).toEqual(traces.map((t) => ({ trace_id: t.trace_id, n: 1 })).sort((a, b) => a.trace_id.localeCompare(b.trace_id)));
    const spanRows = await query(`SELECT count(*)::INTEGER AS n, count(DISTINCT (trace_id, span_index))::INTEGER AS distinct_rows FROM ${dataset(dir, 'spans')}`);
    const spans = traces.reduce((sum, t) => sum + t.spans.length, 0);
    expect(spanRows).toEqual([{ n: spans, distinct_rows: spans }]);
  }

  const BIG = Number.MAX_SAFE_INTEGER;

  it('lands every trace and span with its logical types and values, through the exported handler', async () => {
    const unicode = acceptedTrace({ environment: 'prod-ü', root_span_name: 'Zürich 東京 🚀', attributes: '{"tags":["α","b"],"x":1}', input_tokens: BIG, total_tokens: BIG }, 0);
    unicode.spans = [
      acceptedSpan({ name: 'first 🚀', timestamp: '2026-11-22T10:00:00.000001Z', input: '', output: '', attributes: '{}', model: '', error_message: null, parent_span_id: null, output_tokens: BIG, duration_ms: 0.001 }, 0),
      acceptedSpan({ name: 'second', timestamp: '2026-11-22T09:59:59.999999Z', attributes: '{"tags":[]}', error_message: 'quota “exceeded”', parent_span_id: 'p-1', duration_ms: 1234.5678 }, 1),
      acceptedSpan({ name: 'third', attributes: '{"tags":["x","y","z"]}' }, 2),
    ];
    const otherOrg = acceptedTrace({ timestamp: '2026-11-23T00:00:00.000000Z' }, 1);
    const byReference = acceptedTrace({}, 4);
    const context = traceContext({ org_id: 'org-a', api_key_id: 'key-ä', request_id: 'req-1', received_at: '2026-11-22T10:00:01.654321Z' });
    await engines.s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'overflow/big.json.gz', Body: encodeTraceRecord({ v: 1, context, trace: byReference }) }));
    const records = await publish([
      encodeTraceRecord({ v: 1, context, trace: unicode }),
      Buffer.from('garbage'),
      encodeTraceRecord({ v: 1, context: traceContext({ org_id: 'org-b' }), trace: otherOrg }),
      encodeTraceRecord({ v: 1, context, ref: { bucket, key: 'overflow/big.json.gz', bytes: 1, trace_id: byReference.trace_id } }),
    ]);

    await handler(kinesisEvent(records));

    const { dir, keys } = await download();
    const [first, garbage, third] = records;
    const shard = first!.shardId;
    expect(keys).toEqual(
      [
        `dead-letter/dt=${garbage!.approximateArrivalTimestamp.toISOString().slice(0, 10)}/${shard}-${garbage!.sequenceNumber}.json`,
        'overflow/big.json.gz',
        `spans/org_id=org-a/dt=2026-11-22/hour=10/${shard}-${first!.sequenceNumber}.parquet`,
        `spans/org_id=org-b/dt=2026-11-23/hour=00/${shard}-${third!.sequenceNumber}.parquet`,
        `traces/org_id=org-a/dt=2026-11-22/hour=10/${shard}-${first!.sequenceNumber}.parquet`,
        `traces/org_id=org-b/dt=2026-11-23/hour=00/${shard}-${third!.sequenceNumber}.parquet`,
      ].sort(),
    );

    const types = Object.fromEntries((await query(`DESCRIBE SELECT * FROM ${dataset(dir, 'spans')}`)).map((r) => [r.column_name, r.column_type]));
    expect(types).toMatchObject({ timestamp: 'TIMESTAMP WITH TIME ZONE', received_at: 'TIMESTAMP WITH TIME ZONE', input_tokens: 'BIGINT', total_tokens: 'BIGINT', duration_ms: 'DOUBLE', tags: 'VARCHAR[]', span_index: 'INTEGER', input: 'VARCHAR', org_id: 'VARCHAR' });
    const physical = await query(`SELECT name, type, logical_type FROM parquet_schema('${dir}/spans/org_id=org-a/**/*.parquet') WHERE name IN ('timestamp', 'input_tokens')`);
    expect(physical).toEqual([
      { name: 'timestamp', type: 'INT64', logical_type: 'TimestampType(isAdjustedToUTC=1, unit=TimeUnit(MILLIS=<null>, MICROS=MicroSeconds(), NANOS=<null>))' },
      { name: 'input_tokens', type: 'INT64', logical_type: null },
    ]);

    const spans = await query(
      `SELECT span_index, name, epoch_us("timestamp")::VARCHAR AS ts_us, input, output, model, error_message, parent_span_id, output_tokens::VARCHAR AS output_tokens, duration_ms, tags, api_key_id, epoch_us(received_at)::VARCHAR AS received_us, org_id, dt::VARCHAR AS dt
       FROM ${dataset(dir, 'spans')} WHERE trace_id = '${unicode.trace_id}' ORDER BY span_index`,
    );
    expect(spans).toEqual([
      { span_index: 0, name: 'first 🚀', ts_us: String(Date.UTC(2026, 10, 22, 10) * 1000 + 1), input: '', output: '', model: '', error_message: null, parent_span_id: null, output_tokens: String(BIG), duration_ms: 0.001, tags: [], api_key_id: 'key-ä', received_us: String(Date.UTC(2026, 10, 22, 10, 0, 1) * 1000 + 654321), org_id: 'org-a', dt: '2026-11-22' },
      { span_index: 1, name: 'second', ts_us: String(Date.UTC(2026, 10, 22, 10) * 1000 - 1), input: '{"q":"hello"}', output: '{"a":"world"}', model: 'gpt-4o', error_message: 'quota “exceeded”', parent_span_id: 'p-1', output_tokens: '5', duration_ms: 1234.5678, tags: [], api_key_id: 'key-ä', received_us: String(Date.UTC(2026, 10, 22, 10, 0, 1) * 1000 + 654321), org_id: 'org-a', dt: '2026-11-22' },
      expect.objectContaining({ span_index: 2, name: 'third', tags: ['x', 'y', 'z'] }),
    ]);
    const trace = await query(`SELECT root_span_name, environment, tags, input_tokens::VARCHAR AS input_tokens, span_count, workspace_slug FROM ${dataset(dir, 'traces')} WHERE trace_id = '${unicode.trace_id}'`);
    expect(trace).toEqual([{ root_span_name: 'Zürich 東京 🚀', environment: 'prod-ü', tags: ['α', 'b'], input_tokens: String(BIG), span_count: 3, workspace_slug: 'ws' }]);
    await expectOneCopyOfEach([unicode, otherOrg, byReference]);
  });

  const contexts = (n: number): TraceContext => traceContext({ org_id: ['org-a', 'org-b', 'org-c'][n % 3]! });
  async function mixedBatch(count: number): Promise<{ traces: AcceptedTrace[]; records: LandingRecord[] }> {
    const traces = Array.from({ length: count }, (_, i) => acceptedTrace({ timestamp: i % 4 === 0 ? '2026-11-23T08:00:00.000000Z' : '2026-11-22T08:00:00.000000Z' }, i % 3));
    const records = await publish(traces.map((trace, i) => encodeTraceRecord({ v: 1, context: contexts(i), trace })));
    return { traces, records };
  }

  /** The real bucket, with writes to keys matching `fails` rejected while `failing()` says so. */
  function flaky(fails: (key: string) => boolean): LandingStore {
    const real = new S3LandingStore(engines.s3, bucket);
    return {
      putObject: async (key, body, type) => {
        if (fails(key)) throw new Error(`injected failure for ${key}`);
        await real.putObject(key, body, type);
      },
      getObject: (b, k) => real.getObject(b, k),
    };
  }

  it('leaves one copy of every row when the same batch is landed twice', async () => {
    const { traces, records } = await mixedBatch(9);

    await handler(kinesisEvent(records));
    await handler(kinesisEvent(records));

    await expectOneCopyOfEach(traces);
  });

  it('leaves one copy of every row when a batch is landed whole, one group write fails, and the batch is bisected', async () => {
    const { traces, records } = await mixedBatch(10);
    const mid = Math.ceil(records.length / 2);
    // A group whose records sit in both halves: it was written whole, then must be split exactly.
    const failingKey = `spans/org_id=org-b/dt=2026-11-22/hour=08/${records[1]!.shardId}-${records[1]!.sequenceNumber}.parquet`;
    let attempt = 0;
    const store = flaky((key) => attempt === 0 && key === failingKey);

    await expect(landRecords({ store }, records)).rejects.toThrow(failingKey);
    attempt++;
    await landRecords({ store }, records.slice(0, mid));
    await landRecords({ store }, records.slice(mid));

    await expectOneCopyOfEach(traces);
  });

  it('leaves one copy of every row when a failed range is replayed from the stream and its hours are compacted', async () => {
    const { traces, records } = await mixedBatch(8);
    const range = { streamName: stream, shardId: records[0]!.shardId, startSequenceNumber: records[0]!.sequenceNumber, endSequenceNumber: records.at(-1)!.sequenceNumber };
    const alwaysFailing = flaky((key) => key.startsWith('traces/org_id=org-c/'));
    for (let retry = 0; retry < 3; retry++) await expect(landRecords({ store: alwaysFailing }, records)).rejects.toThrow('objects were not written');

    const summary = await replayRange({ kinesis: engines.kinesis, store: new S3LandingStore(engines.s3, bucket), chunkSize: 3 }, range);

    expect(summary).toMatchObject({ recordsIn: 8, chunks: 3, deadLettered: 0 });
    // The failed attempts' objects stay beside the replay's own: compaction folds them into one copy.
    const run = await compactPending({ store: new S3LakeStore(engines.s3, bucket) }, { includeOpenHours: true });
    expect(run.failed).toEqual([]);
    await expectOneCopyOfEach(traces, 'compacted');
  });
});
