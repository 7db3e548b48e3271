import type { LandableTrace } from './registry.js';

/** 32-bit FNV-1a of a string's UTF-16 code units: the part of a trace, stable across runs and platforms. */
export function partOf(traceId: string, parts: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < traceId.length; i++) {
    hash ^= traceId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % parts;
}

/**
 * Hash buckets of trace ids. Compaction cuts a large hour into hash parts (`partOf(trace_id, parts)`); when the
 * part count is a power of two up to this, a part is a set of these buckets, and the landing orders a large group
 * so that every such set is one contiguous run of rows.
 */
export const HASH_BUCKETS = 128;
const BUCKET_BITS = 7;

/** Span rows from which a landed group is written in hash order, one row group per block of buckets. */
export const HASH_ORDERED_FROM_ROWS = 1024;
/** Rows per block a hash-ordered group aims at: more blocks spare compaction decoding, but smaller row groups compress worse (64 rows per block doubled the raw bytes of the one-organization shape; 512 adds ~25 %). */
const ROWS_PER_BLOCK = 512;

/**
 * The Parquet footer key holding, per row group, the range of hash orders its rows have (JSON `[[first, last], …]`).
 * It names the hash and the bucket count: compaction skips row groups by these ranges, so a footer written under
 * another hash must not be trusted. A change of `partOf`, {@link HASH_BUCKETS} or the bit order takes a new key, and
 * objects with the old one are then read whole, which is always correct.
 */
export const HASH_ORDER_METADATA_KEY = 'trace_ingest.hash_orders.fnv1a32-utf16.b128.v1';

function reverseBits(value: number, bits: number): number {
  let reversed = 0;
  for (let i = 0; i < bits; i++) reversed |= ((value >> i) & 1) << (bits - 1 - i);
  return reversed;
}

/**
 * A trace's place in a hash-ordered group: its bucket with the bits reversed. Part p of 2^k parts is the buckets
 * whose low k bits are p (`partOf(id, 2^k) = bucket mod 2^k`, since 2^k divides 128); reversed, those are the
 * orders whose top k bits are the reverse of p: one contiguous range ({@link partOrders}).
 */
export function hashOrder(traceId: string): number {
  return reverseBits(partOf(traceId, HASH_BUCKETS), BUCKET_BITS);
}

/** True when compaction's part count maps onto the landing's buckets. */
export const isBucketAligned = (parts: number) => parts <= HASH_BUCKETS && (parts & (parts - 1)) === 0;

/**
 * A compaction's part count rounded up to a power of two while that stays within the hash buckets, so that each part
 * is a run of a hash-ordered input's row groups; beyond, as it is.
 */
export function bucketAlignedParts(parts: number): number {
  const power = 2 ** Math.ceil(Math.log2(parts));
  return power <= HASH_BUCKETS ? power : parts;
}

/** The range of hash orders of part `part` of `parts` (bucket-aligned), inclusive. */
export function partOrders(part: number, parts: number): [number, number] {
  const bits = Math.log2(parts);
  const width = HASH_BUCKETS / parts;
  const first = reverseBits(part, bits) * width;
  return [first, first + width - 1];
}

/** How many hash blocks a group of this many span rows lands in: 1 (arrival order) below {@link HASH_ORDERED_FROM_ROWS}. */
export function hashBlockCount(spanRows: number): number {
  return spanRows < HASH_ORDERED_FROM_ROWS ? 1 : Math.min(HASH_BUCKETS, 2 ** Math.floor(Math.log2(spanRows / ROWS_PER_BLOCK)));
}

/** A run of a hash-ordered group's traces whose orders lie in one block. */
export interface HashBlock {
  traces: LandableTrace[];
  orders: [number, number];
}

/**
 * A large group's traces in hash order, cut into blocks of 2^k buckets (as many blocks as keep at least ROWS_PER_BLOCK, 512, span rows each,
 * at most 128), empty blocks left out; undefined for a group below {@link HASH_ORDERED_FROM_ROWS} span rows,
 * which is written in arrival order as before. The order within a bucket is the arrival order.
 */
export function hashBlocks(traces: readonly LandableTrace[]): HashBlock[] | undefined {
  const blocks = hashBlockCount(traces.reduce((sum, t) => sum + t.trace.spans.length, 0));
  if (blocks === 1) return undefined;
  const width = HASH_BUCKETS / blocks;
  const byBlock: LandableTrace[][] = Array.from({ length: blocks }, () => []);
  for (const t of traces) byBlock[Math.floor(hashOrder(t.trace.trace_id) / width)]!.push(t);
  return byBlock.flatMap((run, block) => (run.length === 0 ? [] : [{ traces: run, orders: [block * width, (block + 1) * width - 1] as [number, number] }]));
}
