import { randomUUID } from 'node:crypto';
import { parquetMetadata } from 'hyparquet';
import { compactSlice } from '../../../lambda/lake/lifecycle/compact-slice.js';
import { compactedObjectKey } from '../../../lambda/lake/keys/compacted-keys.js';
import { readRowGroups } from '../../../lambda/lake/lifecycle/parquet-rows.js';
import { HASH_BUCKETS, HASH_ORDERED_FROM_ROWS, HASH_ORDER_METADATA_KEY, hashOrder, isBucketAligned, partOf, partOrders } from '../../../lambda/datasets/hash-parts.js';
import { landRecords } from '../../../lambda/landing/land-records.js';
import { SPANS, TRACES } from '../../../lambda/datasets/registry.js';
import { MemoryBucket } from '../../../devkit/fakes/memory-bucket.js';
import { acceptedTrace, inlineRecord } from '../../../devkit/builders/landing-builders.js';

const SLICE = { orgId: 'org-a', dt: '2026-11-22', hour: '10' };
const asFile = (body: Uint8Array) => body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer;
const footerOrders = (body: Uint8Array) => {
  const metadata = parquetMetadata(asFile(body));
  const value = metadata.key_value_metadata?.find((entry) => entry.key === HASH_ORDER_METADATA_KEY)?.value;
  return { rowGroups: metadata.row_groups.length, orders: value === undefined ? undefined : (JSON.parse(value) as [number, number][]) };
};

/** 600 traces of 8 spans: 4,800 span rows, landed in hash order as 8 blocks of ~600 rows. */
const largeGroup = () => Array.from({ length: 600 }, () => acceptedTrace({}, 8));

describe('hash parts: a large landed group in hash order, a compaction part reading only its row groups', () => {
  it('part p of any power-of-two count is one contiguous range of hash orders, holding exactly its traces', () => {
    const ids = Array.from({ length: 2000 }, () => randomUUID());
    for (let parts = 1; parts <= HASH_BUCKETS; parts *= 2) {
      expect(isBucketAligned(parts)).toBe(true);
      const outside = ids.filter((id) => {
        const [first, last] = partOrders(partOf(id, parts), parts);
        return hashOrder(id) < first || hashOrder(id) > last;
      });
      expect(outside).toEqual([]);
    }
    expect(isBucketAligned(3)).toBe(false);
    expect(isBucketAligned(256)).toBe(false);
  });

  it('lands a large group as row groups of hash blocks, each row inside its row group\'s recorded range; a small group as before', async () => {
    const bucket = new MemoryBucket();
    const traces = largeGroup();
    await landRecords({ store: bucket }, traces.map((t, i) => inlineRecord(i + 1, t)));
    const small = new MemoryBucket();
    await landRecords({ store: small }, traces.slice(0, 10).map((t, i) => inlineRecord(i + 1, t)));
    expect(8 * 600).toBeGreaterThanOrEqual(HASH_ORDERED_FROM_ROWS);

    for (const spec of [TRACES, SPANS]) {
      const [key] = bucket.keys(`${spec.name}/`);
      const { body } = bucket.objects.get(key!)!;
      const { rowGroups, orders } = footerOrders(body);
      expect(orders).toHaveLength(rowGroups);
      expect(rowGroups).toBe(8);
      let index = 0;
      let rows = 0;
      for await (const group of readRowGroups(asFile(body), spec)) {
        const [first, last] = orders![index++]!;
        expect(group.filter((row) => hashOrder(row.trace_id as string) < first || hashOrder(row.trace_id as string) > last)).toEqual([]);
        rows += group.length;
      }
      expect(rows).toBe(spec === TRACES ? 600 : 4800);
      expect(footerOrders(small.objects.get(small.keys(`${spec.name}/`)[0]!)!.body)).toEqual({ rowGroups: 1, orders: undefined });
    }
  });

  it('a part reads only the row groups that can hold its rows, and the parts together read every row once', async () => {
    const bucket = new MemoryBucket();
    await landRecords({ store: bucket }, largeGroup().map((t, i) => inlineRecord(i + 1, t)));
    const file = asFile(bucket.objects.get(bucket.keys('spans/')[0]!)!.body);
    const parts = 8;
    const seen: string[] = [];
    let groupsRead = 0;
    for (let part = 0; part < parts; part++) {
      for await (const group of readRowGroups(file, SPANS, partOrders(part, parts))) {
        groupsRead++;
        for (const row of group) if (partOf(row.trace_id as string, parts) === part) seen.push(`${row.trace_id as string}/${row.span_id as string}`);
      }
    }
    expect(new Set(seen).size).toBe(4800);
    expect(seen).toHaveLength(4800);
    // Without the ranges every part would decode every row group.
    expect(groupsRead).toBeLessThan(parts * parquetMetadata(file).row_groups.length / 2);
  });

  it('compacts hash-ordered inputs to the same rows as arrival-ordered ones, rounding the parts up to a power of two only for the former', async () => {
    const traces = largeGroup();
    const ordered = new MemoryBucket();
    await landRecords({ store: ordered }, traces.map((t, i) => inlineRecord(i + 1, t)));
    const arrival = new MemoryBucket();
    for (let start = 0; start < traces.length; start += 100) await landRecords({ store: arrival }, traces.slice(start, start + 100).map((t, i) => inlineRecord(start + i + 1, t)));
    expect(footerOrders(arrival.objects.get(arrival.keys('spans/')[0]!)!.body).orders).toBeUndefined();

    const deps = (store: MemoryBucket) => ({ store, now: () => new Date('2026-11-23T12:00:00Z'), rowsPerPart: 700, bytesPerPart: 1024 ** 3, rowsPerRowGroup: 500 });
    const fromOrdered = await compactSlice(deps(ordered), SLICE);
    const fromArrival = await compactSlice(deps(arrival), SLICE);
    // 4,800 span rows at 700 a part need 7 parts: 8 where the row groups can be skipped, 7 where every part
    // would decode every input whole anyway (an eighth part would only be one more pass over all of them).
    // hashParts counts both datasets: the 600 trace rows are one part.
    expect({ ordered: fromOrdered.hashParts, arrival: fromArrival.hashParts }).toEqual({ ordered: 1 + 8, arrival: 1 + 7 });
    expect(fromOrdered.rows).toEqual({ traces: 600, spans: 4800 });
    expect(fromArrival.rows).toEqual(fromOrdered.rows);
    for (const [dataset, spec] of [['traces', TRACES], ['spans', SPANS]] as const) {
      const key = compactedObjectKey(dataset, SLICE, 1);
      const rowsOf = async (bucket: MemoryBucket) => {
        const rows: string[] = [];
        for await (const group of readRowGroups(await bucket.open({ key, ...bucket.objects.get(key)!, size: bucket.objects.get(key)!.body.byteLength }), spec)) rows.push(...group.map((row) => JSON.stringify(row, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))));
        return rows.sort();
      };
      expect(await rowsOf(arrival)).toEqual(await rowsOf(ordered));
    }
  });
});
