import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GetRecordsCommand, GetShardIteratorCommand, KinesisClient, PutRecordsCommand } from '@aws-sdk/client-kinesis';
import { DeleteObjectsCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { tableFromIPC } from 'apache-arrow';
import { compactPending } from '../../lambda/compaction/compact-pending.js';
import { S3LakeStore } from '../../lambda/lake/s3-lake-store.js';
import { landRecords } from '../../lambda/landing/land-records.js';
import type { LandingRecord } from '../../lambda/landing/landing-types.js';
import { S3LandingStore } from '../../lambda/landing/s3-landing-store.js';
import type { AcceptedTrace, TraceContext } from '../../lambda/shared/domain/trace.js';
import { encodeTraceRecord } from '../../lambda/shared/domain/trace-record.js';
import { type Engine, startKinesalite, startS3rver } from '../../devkit/engines/engines.js';
import { createBucket, createStream, localClientConfig } from '../../devkit/engines/provision.js';
import { type LandedData, queryLanded } from '../../scripts/local/query.js';
import { replayRange } from '../../scripts/replay/replay-range.js';
import { acceptedSpan, acceptedTrace, inlineRecord, traceContext } from '../../devkit/builders/landing-builders.js';

const wasm = createRequire(__filename)('parquet-wasm/node') as typeof import('parquet-wasm/node');

/**
 * The fault-and-replay paths that put a row into raw objects more than once, on kinesalite and s3rver, then
 * compaction through the S3 adapter, read back with DuckDB (`npm run query`'s views) and with parquet-wasm
 * (the Rust Parquet reader) as a second, independent reader.
 */
describe('compaction against s3rver: every row once after faults and replays', () => {
  const bucket = 'data';
  const stream = 'traces';
  const s3Dir = mkdtempSync(path.join(tmpdir(), 'compaction-it-'));
  const data: LandedData = { s3Directory: s3Dir, bucket };
  let s3Engine: Engine;
  let kinesisEngine: Engine;
  let s3: S3Client;
  let kinesis: KinesisClient;

  beforeAll(async () => {
    [s3Engine, kinesisEngine] = await Promise.all([startS3rver({ dataDir: s3Dir }), startKinesalite()]);
    s3 = new S3Client(localClientConfig(s3Engine.endpoint));
    kinesis = new KinesisClient(localClientConfig(kinesisEngine.endpoint));
    await createBucket(s3, bucket);
    await createStream(kinesis, stream, 1);
  });

  afterAll(async () => {
    s3?.destroy();
    kinesis?.destroy();
    await Promise.all([s3Engine?.stop(), kinesisEngine?.stop()]);
    rmSync(s3Dir, { recursive: true, force: true });
  });

  beforeEach(async () => {
    for (;;) {
      const { Contents = [] } = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
      if (Contents.length === 0) break;
      await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: Contents.map((o) => ({ Key: o.Key! })) } }));
    }
  });

  const store = () => new S3LandingStore(s3, bucket);
  const compact = (extra: { rowsPerPart?: number } = {}) => compactPending({ store: new S3LakeStore(s3, bucket), ...extra }, { includeOpenHours: true });
  const rows = async (sql: string) => (await queryLanded(sql, data))[0]!.rows;

  /** Publishes records and reads them back from the stream with their shard and sequence numbers. */
  async function publish(items: { trace: AcceptedTrace; context: TraceContext }[]): Promise<LandingRecord[]> {
    const put = await kinesis.send(
      new PutRecordsCommand({ StreamName: stream, Records: items.map(({ trace, context }) => ({ Data: encodeTraceRecord({ v: 1, context, trace }), PartitionKey: trace.trace_id })) }),
    );
    const first = put.Records![0]!;
    const { ShardIterator } = await kinesis.send(
      new GetShardIteratorCommand({ StreamName: stream, ShardId: first.ShardId!, ShardIteratorType: 'AT_SEQUENCE_NUMBER', StartingSequenceNumber: first.SequenceNumber! }),
    );
    const { Records = [] } = await kinesis.send(new GetRecordsCommand({ ShardIterator, Limit: items.length }));
    return Records.map((r) => ({ shardId: first.ShardId!, sequenceNumber: r.SequenceNumber!, data: r.Data!, approximateArrivalTimestamp: r.ApproximateArrivalTimestamp! }));
  }

  /** Two hours of one org and one of another, 0–3 spans per trace. */
  function traffic(count: number, offset = 0): { trace: AcceptedTrace; context: TraceContext }[] {
    return Array.from({ length: count }, (_, i) => ({
      trace: acceptedTrace({ timestamp: i % 3 === 0 ? '2026-11-22T11:30:00.000000Z' : '2026-11-22T10:15:00.000000Z' }, (i + offset) % 4),
      context: traceContext({ org_id: i % 5 === 0 ? 'org-b' : 'org-a', request_id: `req-${offset + i}` }),
    }));
  }

  const DUPLICATES = {
    traces: 'SELECT count(*)::INTEGER AS rows, count(DISTINCT trace_id)::INTEGER AS ids FROM traces',
    spans: 'SELECT count(*)::INTEGER AS rows, count(DISTINCT (trace_id, span_id))::INTEGER AS ids FROM spans',
  };

  /** Raw rows reduced by the winner rule, in DuckDB: what the compacted tables must hold, value for value. */
  const EXPECTED = {
    traces: 'SELECT * FROM traces_raw QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY received_at DESC, request_id DESC) = 1',
    spans: 'SELECT * FROM spans_raw QUALIFY row_number() OVER (PARTITION BY trace_id, span_id ORDER BY received_at DESC, request_id DESC) = 1',
  };

  async function expectExactlyOnce(traces: number, spans: number): Promise<void> {
    expect(await rows(DUPLICATES.traces)).toEqual([{ rows: traces, ids: traces }]);
    expect(await rows(DUPLICATES.spans)).toEqual([{ rows: spans, ids: spans }]);
    for (const dataset of ['traces', 'spans'] as const) {
      const difference = `SELECT count(*)::INTEGER AS n FROM ((${EXPECTED[dataset]}) EXCEPT ALL (SELECT * FROM ${dataset})) UNION ALL SELECT count(*)::INTEGER FROM ((SELECT * FROM ${dataset}) EXCEPT ALL (${EXPECTED[dataset]}))`;
      expect(await rows(difference)).toEqual([{ n: 0 }, { n: 0 }]);
    }
  }

  /** The compacted objects of the current generations, read by parquet-wasm: row count and identities. */
  async function readWithParquetWasm(dataset: 'traces' | 'spans'): Promise<string[]> {
    const manifests = await new S3LakeStore(s3, bucket).list('manifests/');
    const ids: string[] = [];
    for (const { key } of manifests) {
      const manifest = JSON.parse(readFileSync(path.join(s3Dir, bucket, `${key}._S3rver_object`), 'utf8')) as { traces: { files: string[] }; spans: { files: string[] } };
      for (const file of manifest[dataset].files) {
        const table = tableFromIPC(wasm.readParquet(readFileSync(path.join(s3Dir, bucket, `${file}._S3rver_object`))).intoIPCStream());
        for (const row of table) {
          const value = row.toJSON() as { trace_id: string; span_id?: string };
          ids.push(dataset === 'traces' ? value.trace_id : `${value.trace_id}/${value.span_id}`);
        }
      }
    }
    return ids.sort();
  }

  it('holds every trace and span once after a retried batch, a client resend and overlapping replays, for DuckDB and parquet-wasm alike', async () => {
    const items = traffic(40);
    const first = await publish(items);
    // A Lambda that timed out after writing: the same batch lands again (same keys, exact overwrite).
    await landRecords({ store: store() }, first.slice(0, 20));
    await landRecords({ store: store() }, first.slice(0, 20));
    await landRecords({ store: store() }, first.slice(20));
    // The client resends part of a batch after a partially failed PutRecords: same traces, a new request, later.
    const resend = await publish(items.slice(5, 10).map(({ trace, context }) => ({ trace, context: { ...context, request_id: 'req-resend', received_at: '2026-11-22T12:00:00.000000Z' } })));
    await landRecords({ store: store() }, resend);
    // A replay of the shard over a range overlapping both landed batches (other first records: other keys).
    await replayRange({ kinesis, store: store(), chunkSize: 7 }, { streamName: stream, shardId: first[0]!.shardId, startSequenceNumber: first[10]!.sequenceNumber, endSequenceNumber: first[30]!.sequenceNumber });

    const [rawTraces] = await rows('SELECT count(*)::INTEGER AS n FROM traces_raw');
    expect((rawTraces as { n: number }).n).toBeGreaterThan(40);
    const run = await compact();
    expect(run.failed).toEqual([]);
    expect(run.compacted.map((c) => `${c.slice.orgId}/${c.slice.hour}`).sort()).toEqual(["org-a/10", "org-a/11", "org-b/10", "org-b/11"]);

    await expectExactlyOnce(40, (await rows(`SELECT count(DISTINCT (trace_id, span_id))::INTEGER AS n FROM spans_raw`))[0]!.n as number);
    const duck = { traces: (await rows('SELECT trace_id FROM traces ORDER BY trace_id')).map((r) => r.trace_id as string), spans: (await rows(`SELECT trace_id || '/' || span_id AS id FROM spans ORDER BY id`)).map((r) => r.id as string) };
    expect(await readWithParquetWasm('traces')).toEqual(duck.traces);
    expect(await readWithParquetWasm('spans')).toEqual(duck.spans);
  });

  it('recompacts an hour after late data and a second replay of everything, and still holds every row once', async () => {
    const items = traffic(24, 100);
    const records = await publish(items);
    await landRecords({ store: store() }, records);
    expect((await compact()).failed).toEqual([]);
    await expectExactlyOnce(24, (await rows('SELECT count(*)::INTEGER AS n FROM spans'))[0]!.n as number);

    const late = await publish(traffic(6, 200));
    await landRecords({ store: store() }, late);
    await replayRange({ kinesis, store: store(), chunkSize: 5 }, { streamName: stream, shardId: records[0]!.shardId, startSequenceNumber: records[0]!.sequenceNumber, endSequenceNumber: late.at(-1)!.sequenceNumber });
    // Before recompaction: the late rows are visible from raw, the replayed copies too (the documented window).
    expect((await rows('SELECT count(DISTINCT trace_id)::INTEGER AS n FROM traces'))[0]).toEqual({ n: 30 });

    const run = await compact();
    expect(run.failed).toEqual([]);
    expect(run.compacted.every((c) => c.generation === 2)).toBe(true);
    await expectExactlyOnce(30, (await rows('SELECT count(DISTINCT (trace_id, span_id))::INTEGER AS n FROM spans_raw'))[0]!.n as number);
    expect(await readWithParquetWasm('traces')).toEqual((await rows('SELECT trace_id FROM traces ORDER BY trace_id')).map((r) => r.trace_id as string));
  });

  it('compacts an hour of more than 1,000 raw objects per dataset, listed across ListObjectsV2 pages, to every trace once', async () => {
    // One record per landing call, so one traces and one spans object each: 1,010 raw objects per dataset,
    // more than the 1,000 keys of one listing page (s3rver must hand out continuation tokens that work).
    const traces = Array.from({ length: 1_010 }, () => acceptedTrace({}, 1));
    for (let start = 0; start < traces.length; start += 25) {
      await Promise.all(traces.slice(start, start + 25).map((trace, i) => landRecords({ store: store() }, [inlineRecord(start + i + 1, trace)])));
    }
    // A replay of the first ten in one batch: the exactly-once view folds both copies into one.
    await landRecords({ store: store() }, traces.slice(0, 10).map((trace, i) => inlineRecord(10_000 + i, trace)));
    const listing = new S3LakeStore(s3, bucket);
    expect((await listing.list('traces/')).length).toBe(1_011);
    expect((await listing.list('spans/')).length).toBe(1_011);

    const run = await compact();

    expect(run.failed).toEqual([]);
    await expectExactlyOnce(1_010, 1_010);
    expect(await readWithParquetWasm('traces')).toEqual(traces.map((t) => t.trace_id).sort());
    // 2,020 landings and a compaction of 1,011 objects per dataset through s3rver: it ran past the
    // suite's 120 s at load 18 (seen). The bound is against a hang, not a measure of speed.
  }, 600_000);

  it('keeps organizations whose ids partition readers read as NULL reachable and apart in npm run query, raw and compacted', async () => {
    // Created before such ids were refused (newOrgIdProblem): DuckDB's Hive partitioning read all three as NULL.
    const orgs = ['NULL', 'null', '__HIVE_DEFAULT_PARTITION__', 'org-plain'];
    const landed = orgs.map((org_id, i) => ({ org_id, traces: Array.from({ length: i + 1 }, () => acceptedTrace({}, 1)) }));
    let n = 0;
    for (const { org_id, traces } of landed) {
      await landRecords({ store: store() }, traces.map((trace) => inlineRecord(++n, trace, traceContext({ org_id, request_id: `req-${n}` }))));
    }
    const perOrg = (view: string) => rows(`SELECT org_id, count(*)::INTEGER AS n FROM ${view} GROUP BY org_id ORDER BY org_id`);
    const expected = landed.map(({ org_id, traces }) => ({ org_id, n: traces.length })).sort((a, b) => (a.org_id < b.org_id ? -1 : 1));
    expect(await perOrg('traces_raw')).toEqual(expected);

    expect((await compact()).failed).toEqual([]);

    expect(await perOrg('traces')).toEqual(expected);
    expect(await perOrg('spans')).toEqual(expected);
    expect(await rows(`SELECT count(*)::INTEGER AS n FROM traces WHERE org_id = 'NULL'`)).toEqual([{ n: 1 }]);
    expect(await rows(`SELECT count(*)::INTEGER AS n FROM traces WHERE org_id = '__HIVE_DEFAULT_PARTITION__'`)).toEqual([{ n: 3 }]);
    expect(await rows('SELECT count(*)::INTEGER AS n FROM traces WHERE org_id IS NULL OR dt IS NULL OR hour IS NULL')).toEqual([{ n: 0 }]);
  });

  it('keeps a trace resent into another hour in both hours (deduplication is per hour of the trace timestamp); the documented query picks the later', async () => {
    const first = acceptedTrace({ timestamp: '2026-11-22T10:59:59.000000Z' }, 1);
    const moved = { ...first, timestamp: '2026-11-22T11:00:01.000000Z', spans: first.spans.map((span) => ({ ...span, timestamp: '2026-11-22T11:00:01.000000Z' })) };
    await landRecords({ store: store() }, [inlineRecord(1, first, traceContext({ request_id: 'req-first', received_at: '2026-11-22T11:00:00.000000Z' }))]);
    await landRecords({ store: store() }, [inlineRecord(2, moved, traceContext({ request_id: 'req-resend', received_at: '2026-11-22T11:00:05.000000Z' }))]);

    expect((await compact()).failed).toEqual([]);

    const sql = (view: string) => `SELECT hour, request_id FROM ${view} WHERE trace_id = '${first.trace_id}' ORDER BY hour`;
    expect(await rows(sql('traces'))).toEqual([{ hour: '10', request_id: 'req-first' }, { hour: '11', request_id: 'req-resend' }]);
    expect(await rows(sql('spans'))).toEqual([{ hour: '10', request_id: 'req-first' }, { hour: '11', request_id: 'req-resend' }]);
    const latest = `SELECT hour, request_id FROM traces WHERE trace_id = '${first.trace_id}' QUALIFY row_number() OVER (PARTITION BY org_id, trace_id ORDER BY received_at DESC, request_id DESC) = 1`;
    expect(await rows(latest)).toEqual([{ hour: '11', request_id: 'req-resend' }]);
  });

  it('writes an object larger than an upload part by a multipart upload that s3rver assembles, read back whole by DuckDB and parquet-wasm', async () => {
    // Random (incompressible) text of ~1.4 MB per span: the hour's spans object is ~8.4 MB, two parts of S3's 5 MiB minimum.
    const traces = Array.from({ length: 3 }, () => ({ ...acceptedTrace({}, 0), spans: [0, 1].map((i) => acceptedSpan({ input: randomBytes(1_050_000).toString('base64') }, i)) }));
    await landRecords({ store: store() }, traces.map((trace, i) => inlineRecord(i + 1, trace)));
    const s3Store = new S3LakeStore(s3, bucket);
    const calls: string[] = [];
    const counting = Object.assign(Object.create(s3Store) as S3LakeStore, {
      createMultipartUpload: (key: string, type: string) => (calls.push('create'), s3Store.createMultipartUpload(key, type)),
      uploadPart: (key: string, id: string, n: number, body: Uint8Array) => (calls.push(`part ${n}: ${body.byteLength >= 5 * 1024 * 1024 ? '>= 5 MiB' : 'last'}`), s3Store.uploadPart(key, id, n, body)),
      completeMultipartUpload: (...args: Parameters<S3LakeStore['completeMultipartUpload']>) => (calls.push('complete'), s3Store.completeMultipartUpload(...args)),
    });

    const run = await compactPending({ store: counting, rowsPerRowGroup: 1, uploadPartBytes: 5 * 1024 * 1024 }, { includeOpenHours: true });

    expect(run.failed).toEqual([]);
    expect(calls).toEqual(['create', 'part 1: >= 5 MiB', 'part 2: last', 'complete']);
    const [object] = await s3Store.list('compacted/spans/');
    expect(object?.key).toMatch(/\/g000001\.parquet$/);
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: object!.key }));
    expect(head.ContentLength).toBe(statSync(path.join(s3Dir, bucket, `${object!.key}._S3rver_object`)).size);
    expect(head.ContentLength).toBeGreaterThan(5 * 1024 * 1024);
    expect(await rows('SELECT count(*)::INTEGER AS n, sum(length(input))::INTEGER AS chars FROM spans')).toEqual([{ n: 6, chars: 6 * 1_400_000 }]);
    expect(await readWithParquetWasm('spans')).toEqual(traces.flatMap((t) => t.spans.map((s) => `${t.trace_id}/${s.span_id}`)).sort());
  });
});
