import { parquetMetadata } from 'hyparquet';
import { HASH_BUCKETS, HASH_ORDER_METADATA_KEY } from '../../../lambda/datasets/hash-parts.js';
import { LandingBatchError, landRecords } from '../../../lambda/landing/land-records.js';
import type { LandingStore } from '../../../lambda/landing/ports.js';
import { PendingGroups } from '../../../lambda/landing/steps/pending-groups.js';
import { encodeTraceRecord } from '../../../lambda/shared/domain/trace-record.js';
import { SHARD, acceptedSpan, acceptedTrace, inlineRecord, landingRecord, sequenceNumber, traceContext } from '../../../devkit/builders/landing-builders.js';
import { toLandableTrace } from '../../../lambda/landing/landable-trace.js';

// The landing's steps one by one: what a failed batch says, what a dead letter holds, what the summary counts, when
// the pending traces are written out, and the hash-order footer of a large group.

interface Put {
  key: string;
  body: Uint8Array;
  contentType: string;
}

class RecordingStore implements LandingStore {
  readonly puts: Put[] = [];
  constructor(
    private readonly objects = new Map<string, Uint8Array>(),
    private readonly failing = new Set<string>(),
  ) {}
  async putObject(key: string, body: Uint8Array, contentType: string): Promise<void> {
    await Promise.resolve();
    if (this.failing.has(key)) throw new Error(`refused ${key}`);
    this.puts.push({ key, body, contentType });
  }
  async getObject(_bucket: string, key: string): Promise<Uint8Array> {
    const found = this.objects.get(key);
    if (!found) throw new Error(`no ${key}`);
    return found;
  }
}

const logger = () => {
  const lines: { level: string; message: string; fields: unknown }[] = [];
  const log = (level: string) => (message: string, fields?: unknown) => lines.push({ level, message, fields });
  return { lines, logger: { warn: log('warn'), error: log('error') } as never };
};

const spansKey = (n: number, org = 'org-a') => `spans/org_id=${org}/dt=2026-11-22/hour=10/${SHARD}-${sequenceNumber(n)}.parquet`;
const tracesKey = (n: number, org = 'org-a') => `traces/org_id=${org}/dt=2026-11-22/hour=10/${SHARD}-${sequenceNumber(n)}.parquet`;

describe('a landing that fails', () => {
  it('says which objects of how many were not written, logs them, and keeps the first failure as its cause', async () => {
    const store = new RecordingStore(new Map(), new Set([spansKey(1), tracesKey(2, 'org-b')]));
    const { lines, logger: log } = logger();
    const records = [inlineRecord(1, acceptedTrace()), inlineRecord(2, acceptedTrace(), traceContext({ org_id: 'org-b' }))];
    const failure = (await landRecords({ store, logger: log }, records).catch((error: unknown) => error)) as LandingBatchError;
    expect(failure).toBeInstanceOf(LandingBatchError);
    expect(failure.name).toBe('LandingBatchError');
    expect(failure.message).toBe(`2 of 4 objects were not written: ${spansKey(1)}, ${tracesKey(2, 'org-b')}`);
    expect((failure.cause as Error).message).toBe(`refused ${spansKey(1)}`);
    expect(lines).toEqual([{ level: 'error', message: 'Landing failed; the whole batch will be retried', fields: { failed: [spansKey(1), tracesKey(2, 'org-b')], of: 4 } }]);
  });

  it('counts the objects of every part of a batch written in parts', async () => {
    const store = new RecordingStore(new Map(), new Set([spansKey(1)]));
    const records = [inlineRecord(1, acceptedTrace({}, 3)), inlineRecord(2, acceptedTrace({}, 3))];
    const failure = (await landRecords({ store, maxPendingSpanRows: 3 }, records).catch((error: unknown) => error)) as LandingBatchError;
    expect(failure.message).toBe(`1 of 4 objects were not written: ${spansKey(1)}`);
  });
});

describe('a landing', () => {
  it('counts every byte it wrote', async () => {
    const store = new RecordingStore();
    const summary = await landRecords({ store }, [inlineRecord(1, acceptedTrace()), landingRecord(2, Buffer.from('junk'))]);
    expect(summary.objectsWritten).toBe(3);
    expect(summary.bytesWritten).toBe(store.puts.reduce((sum, put) => sum + put.body.byteLength, 0));
    expect(store.puts.map((put) => [put.key.split('/')[0], put.contentType]).sort()).toEqual([
      ['dead-letter', 'application/json'],
      ['spans', 'application/vnd.apache.parquet'],
      ['traces', 'application/vnd.apache.parquet'],
    ]);
  });

  it('logs each dead letter with its key and reason', async () => {
    const { lines, logger: log } = logger();
    await landRecords({ store: new RecordingStore(), logger: log }, [landingRecord(7, Buffer.from('junk'))]);
    expect(lines).toEqual([
      {
        level: 'warn',
        message: 'Dead-lettering a record that cannot be landed',
        fields: { key: `dead-letter/dt=2026-11-22/${SHARD}-${sequenceNumber(7)}.json`, reason: expect.stringContaining('neither gzip nor zstd'), shardId: SHARD, sequenceNumber: sequenceNumber(7) },
      },
    ]);
  });

  it.each([
    ['holds another reference', (ref: { bucket: string; key: string; trace_id: string }) => encodeTraceRecord({ v: 1, context: traceContext(), ref: { ...ref, bytes: 1 } }), 'UnlandableRecordError: referenced object s3://overflow-bucket/o.json.gz holds another reference'],
    ['holds another trace', () => encodeTraceRecord({ v: 1, context: traceContext(), trace: acceptedTrace({ trace_id: 'other-trace' }) }), 'UnlandableRecordError: referenced object holds trace other-trace, the pointer names wanted-trace'],
  ])('dead-letters a reference whose object %s', async (_, stored, reason) => {
    const ref = { bucket: 'overflow-bucket', key: 'o.json.gz', trace_id: 'wanted-trace' };
    const store = new RecordingStore(new Map([[ref.key, stored(ref)]]));
    const summary = await landRecords({ store }, [landingRecord(3, encodeTraceRecord({ v: 1, context: traceContext(), ref: { ...ref, bytes: 1 } }))]);
    expect(summary.deadLettered).toBe(1);
    expect(JSON.parse(Buffer.from(store.puts[0]!.body).toString('utf8'))).toMatchObject({ reason });
  });
});

describe('the pending traces', () => {
  const landable = (spans: number, text: Partial<{ input: string; output: string; attributes: string; error_message: string; name: string }> = {}, traceAttributes = '') => {
    const spanList = Array.from({ length: spans }, (_, i) => acceptedSpan({ input: '', output: '', attributes: '', name: '', error_message: null, ...text } as never, i));
    return toLandableTrace(traceContext(), { ...acceptedTrace({ attributes: traceAttributes } as never, 0), spans: spanList } as never);
  };

  it('are full once their text reaches the bound, counting every text field of every span and the trace', () => {
    // Each span: 1 + 2 + 3 + 4 + 5 = 15 characters; the trace's attributes 6.
    const trace = landable(2, { input: 'a', output: 'bb', attributes: 'ccc', error_message: 'dddd', name: 'eeeee' }, 'ffffff');
    for (const [bound, full] of [[36, true], [37, false]] as const) {
      const pending = new PendingGroups({ maxSpanRows: 1_000, maxTextCharacters: bound });
      pending.add(landingRecord(1, new Uint8Array()), trace);
      expect([bound, pending.full]).toEqual([bound, full]);
    }
  });

  it('count a span without an error message as none', () => {
    const trace = landable(1, { input: 'abc' });
    const pending = new PendingGroups({ maxSpanRows: 1_000, maxTextCharacters: 4 });
    pending.add(landingRecord(1, new Uint8Array()), trace);
    expect(pending.full).toBe(false);
  });

  it('start empty again once drained, the copies already seen still skipped', () => {
    const trace = landable(2, { input: 'abcd' });
    const pending = new PendingGroups({ maxSpanRows: 2, maxTextCharacters: 8 });
    expect(pending.add(landingRecord(1, new Uint8Array()), trace)).toBe(true);
    expect(pending.full).toBe(true);
    expect(pending.drain().map((group) => group.traces.length)).toEqual([1]);
    expect(pending.full).toBe(false);
    expect(pending.add(landingRecord(2, new Uint8Array()), trace)).toBe(false);
    expect(pending.drain()).toEqual([]);
  });
});

describe('a large group', () => {
  it('is written in hash order, its footer giving per row group the block of hash orders it holds', async () => {
    const store = new RecordingStore();
    // 64 traces of 20 spans: 1,280 span rows, two blocks of hash orders; a spans-only trace has no trace row.
    const traces = Array.from({ length: 64 }, () => acceptedTrace({}, 20));
    const records = traces.map((trace, i) => inlineRecord(i + 1, trace, i === 0 ? traceContext({ spans_only: true } as never) : traceContext()));
    const summary = await landRecords({ store, rowsPerRowGroup: 300 }, records);
    expect(summary.rows).toEqual({ traces: 63, spans: 1280 });
    const half = HASH_BUCKETS / 2;
    for (const dataset of ['traces', 'spans']) {
      const put = store.puts.find((p) => p.key.startsWith(`${dataset}/`))!;
      const metadata = parquetMetadata(put.body.buffer.slice(put.body.byteOffset, put.body.byteOffset + put.body.byteLength) as ArrayBuffer);
      const orders = JSON.parse(metadata.key_value_metadata!.find((entry) => entry.key === HASH_ORDER_METADATA_KEY)!.value!) as [number, number][];
      const rows = metadata.row_groups.map((group) => Number(group.num_rows));
      expect(orders).toHaveLength(rows.length);
      expect(rows.every((count) => count <= 300)).toBe(true);
      // Every row group lies in one of the two blocks, the first block's row groups first.
      const blocks = orders.map(([first, last]) => (first === 0 && last === half - 1 ? 0 : first === half && last === HASH_BUCKETS - 1 ? 1 : -1));
      expect(blocks).toEqual([...blocks].sort());
      expect(new Set(blocks)).toEqual(new Set([0, 1]));
      expect(rows.reduce((sum, count) => sum + count, 0)).toBe(dataset === 'traces' ? 63 : 1280);
    }
  });

  it('below the threshold is written in arrival order, with no hash-order footer', async () => {
    const store = new RecordingStore();
    await landRecords({ store }, [inlineRecord(1, acceptedTrace({}, 20))]);
    for (const put of store.puts) {
      const metadata = parquetMetadata(put.body.buffer.slice(put.body.byteOffset, put.body.byteOffset + put.body.byteLength) as ArrayBuffer);
      expect((metadata.key_value_metadata ?? []).some((entry) => entry.key === HASH_ORDER_METADATA_KEY)).toBe(false);
    }
  });
});
