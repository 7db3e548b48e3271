import { PARTITION_CHUNK, PartitionChunks, publishTraces } from '../../../lambda/ingest/core/publish/publish-traces.js';
import type { StreamRecord } from '../../../lambda/ingest/core/publish/ports.js';
import { traceContext } from '../../../devkit/builders/landing-builders.js';

const keys = (chunks: PartitionChunks, sizes: readonly number[]) => sizes.map((bytes) => chunks.keyFor(bytes));

describe('partition keys: a request travels in chunks, each on one shard', () => {
  it('cuts a chunk every 100 records', () => {
    const assigned = keys(new PartitionChunks('req-1'), Array.from({ length: 250 }, () => 1000));
    expect(assigned.filter((key) => key === 'req-1#0')).toHaveLength(PARTITION_CHUNK.maxRecords);
    expect(assigned.filter((key) => key === 'req-1#1')).toHaveLength(100);
    expect(assigned.filter((key) => key === 'req-1#2')).toHaveLength(50);
    expect(assigned).toEqual([...assigned].sort((a, b) => Number(a.split('#')[1]) - Number(b.split('#')[1])));
  });

  it('cuts a chunk before it would pass 256 KiB, and gives a larger record a chunk of its own', () => {
    const kib = 1024;
    expect(keys(new PartitionChunks('r'), [100 * kib, 100 * kib, 100 * kib, 56 * kib, 300 * kib, 1 * kib])).toEqual(['r#0', 'r#0', 'r#1', 'r#1', 'r#2', 'r#3']);
    // Exactly 256 KiB is one chunk; one byte more starts the next.
    expect(keys(new PartitionChunks('r'), [128 * kib, 128 * kib, 1])).toEqual(['r#0', 'r#0', 'r#1']);
  });

  it('keeps keys within Kinesis\'s 256 characters whatever the identity', () => {
    const key = new PartitionChunks('x'.repeat(1000)).keyFor(1);
    expect(key.length).toBeLessThanOrEqual(256);
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}#0$/);
  });

  it('publishes every record of one request under its identity, the same keys for the same request again', async () => {
    const publish = async () => {
      const published: StreamRecord[] = [];
      const traces = Array.from({ length: 130 }, (_, index) => ({
        context: traceContext({ request_id: 'req-9', record_id: `idem-abc/${index}` }),
        index,
        traceId: `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`,
        data: Buffer.alloc(500),
      }));
      await publishTraces({ sink: { publish: async (records) => void published.push(...records) }, overflow: { put: async () => ({ bucket: 'b', key: 'k' }), delete: async () => undefined }, logger: { warn: () => undefined, error: () => undefined } }, traces);
      return published.map((record) => record.partitionKey);
    };
    const first = await publish();
    expect(new Set(first)).toEqual(new Set(['idem-abc#0', 'idem-abc#1']));
    expect(first.filter((key) => key === 'idem-abc#1')).toHaveLength(30);
    expect(await publish()).toEqual(first);
  });
});
