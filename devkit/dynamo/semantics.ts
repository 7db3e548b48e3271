import type { AttributeValue } from '@aws-sdk/client-dynamodb';

/**
 * What DynamoDB does that DynamoDB Local does not: transaction conflicts and per-item/per-partition
 * write throughput. Pure bookkeeping over a clock; the HTTP proxy in front of DynamoDB Local and the
 * in-memory model both ask it before they apply a write, so both behave the same way.
 *
 * Sources (DynamoDB Developer Guide): "Transaction conflict handling in DynamoDB" (a write or
 * transaction touching an item held by an ongoing `TransactWriteItems` is refused:
 * `TransactionCanceledException` with `TransactionConflict` at the conflicting indexes and `None`
 * elsewhere, or `TransactionConflictException` for a single-item write); "Capacity units for
 * transactions" (a transactional write costs 2 WCU per KB per item); "Burst and adaptive capacity" /
 * partition limits (one partition, and so one item, takes at most 1,000 WCU per second).
 */

export interface DynamoSemanticsOptions {
  /** How long a `TransactWriteItems` holds its items, before jitter. Default 15 ms. */
  holdMs: number;
  /** Added to each hold: uniform in [0, holdJitterMs). Default 5 ms. */
  holdJitterMs: number;
  /** Write capacity one item takes per second. Default 1,000 WCU. */
  itemWcuPerSecond: number;
  /** Write capacity one partition (one partition key here) takes per second. Default 1,000 WCU. */
  partitionWcuPerSecond: number;
  random: () => number;
}

export const DEFAULT_SEMANTICS: DynamoSemanticsOptions = {
  holdMs: 15,
  holdJitterMs: 5,
  itemWcuPerSecond: 1_000,
  partitionWcuPerSecond: 1_000,
  random: Math.random,
};

/** One item a write touches: its table, its key, and the size the write leaves it at. */
export interface WriteTarget {
  table: string;
  key: Record<string, AttributeValue>;
  /** Bytes of the item after the write (or before it, for a delete): what capacity is charged on. */
  sizeBytes: number;
}

/** The cancellation reason codes DynamoDB returns per item of a cancelled transaction. */
export type ReasonCode = 'None' | 'TransactionConflict' | 'ThrottlingError' | 'ConditionalCheckFailed' | 'ValidationError';

export type TransactionAdmission =
  | { admitted: true; wcu: number; holdMs: number }
  | { admitted: false; reasons: ReasonCode[] };

export type SingleWriteAdmission =
  | { admitted: true; wcu: number }
  | { admitted: false; error: 'TransactionConflictException' | 'ProvisionedThroughputExceededException' };

/** Size of an item as DynamoDB counts it: attribute names plus values (close enough for capacity). */
export function itemSizeBytes(item: Record<string, AttributeValue> | undefined): number {
  if (!item) return 0;
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += Buffer.byteLength(name) + valueSize(value);
  return size;
}

function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S);
  if (value.N !== undefined) return Math.ceil(value.N.replace(/^-/, '').length / 2) + 1;
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.L !== undefined) return 3 + value.L.reduce((sum, v) => sum + 1 + valueSize(v), 0);
  if (value.M !== undefined) return 3 + itemSizeBytes(value.M);
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + Buffer.byteLength(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, n) => sum + n.length, 0);
  return 0;
}

/** Write units for one item: 1 per started KB, doubled inside a transaction. */
export function writeUnits(sizeBytes: number, transactional: boolean): number {
  return Math.max(1, Math.ceil(sizeBytes / 1024)) * (transactional ? 2 : 1);
}

/** A token bucket of one second's capacity: what DynamoDB allows an item or a partition per second. */
class CapacityBucket {
  private tokens: number;
  private at: number;
  constructor(
    private readonly perSecond: number,
    now: number,
  ) {
    this.tokens = perSecond;
    this.at = now;
  }
  available(now: number): number {
    this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
    return this.tokens;
  }
  take(units: number): void {
    this.tokens -= units;
  }
}

const itemId = (target: WriteTarget) => `${target.table}\u0000${JSON.stringify(target.key)}`;
/** The partition key is the first key attribute, `pk` in this project's tables. */
const partitionId = (target: WriteTarget) => `${target.table}\u0000${JSON.stringify(target.key.pk ?? Object.values(target.key)[0])}`;

/**
 * The conflict and throughput state of one table set. Every write asks `admitTransaction` or
 * `admitSingleWrite` at the moment it starts; an admitted transaction holds its items until
 * `now + holdMs` (the caller answers it then).
 */
export class DynamoSemantics {
  private readonly held = new Map<string, number>();
  private readonly itemBuckets = new Map<string, CapacityBucket>();
  private readonly partitionBuckets = new Map<string, CapacityBucket>();
  /** Write units charged so far, for benches. */
  consumedWcu = 0;
  readonly options: DynamoSemanticsOptions;

  constructor(
    private readonly now: () => number,
    options: Partial<DynamoSemanticsOptions> = {},
  ) {
    this.options = { ...DEFAULT_SEMANTICS, ...options };
  }

  /**
   * A `TransactWriteItems` arriving now. Conflicts are reported first (they are what DynamoDB checks
   * before it spends capacity), then throttling; condition checks are the caller's, after admission.
   */
  admitTransaction(targets: readonly WriteTarget[]): TransactionAdmission {
    const now = this.now();
    const conflicts = targets.map((t) => this.isHeld(itemId(t), now));
    if (conflicts.some(Boolean)) return { admitted: false, reasons: conflicts.map((c) => (c ? 'TransactionConflict' : 'None')) };
    const units = targets.map((t) => writeUnits(t.sizeBytes, true));
    const throttled = this.throttledIndexes(targets, units, now);
    if (throttled.some(Boolean)) return { admitted: false, reasons: throttled.map((t) => (t ? 'ThrottlingError' : 'None')) };
    const wcu = this.charge(targets, units, now);
    const holdMs = this.options.holdMs + this.options.random() * this.options.holdJitterMs;
    for (const target of targets) this.held.set(itemId(target), now + holdMs);
    return { admitted: true, wcu, holdMs };
  }

  /** A `PutItem`, `UpdateItem` or `DeleteItem` arriving now. */
  admitSingleWrite(target: WriteTarget): SingleWriteAdmission {
    const now = this.now();
    if (this.isHeld(itemId(target), now)) return { admitted: false, error: 'TransactionConflictException' };
    const units = [writeUnits(target.sizeBytes, false)];
    if (this.throttledIndexes([target], units, now)[0]) return { admitted: false, error: 'ProvisionedThroughputExceededException' };
    return { admitted: true, wcu: this.charge([target], units, now) };
  }

  /**
   * Ends a transaction's hold early: the model and the proxy call it when the transaction failed
   * after admission (a condition check failed), because DynamoDB releases the items then too.
   */
  releaseHold(targets: readonly WriteTarget[]): void {
    for (const target of targets) this.held.delete(itemId(target));
  }

  private isHeld(id: string, now: number): boolean {
    const until = this.held.get(id);
    if (until === undefined) return false;
    if (until > now) return true;
    this.held.delete(id);
    return false;
  }

  /** Per index: would this write exceed its item's or its partition's capacity for this second? */
  private throttledIndexes(targets: readonly WriteTarget[], units: readonly number[], now: number): boolean[] {
    const wantedPerPartition = new Map<string, number>();
    targets.forEach((t, i) => wantedPerPartition.set(partitionId(t), (wantedPerPartition.get(partitionId(t)) ?? 0) + (units[i] ?? 0)));
    return targets.map((target, i) => {
      const item = this.bucket(this.itemBuckets, itemId(target), this.options.itemWcuPerSecond, now);
      const partition = this.bucket(this.partitionBuckets, partitionId(target), this.options.partitionWcuPerSecond, now);
      return item.available(now) < (units[i] ?? 0) || partition.available(now) < (wantedPerPartition.get(partitionId(target)) ?? 0);
    });
  }

  private charge(targets: readonly WriteTarget[], units: readonly number[], now: number): number {
    let total = 0;
    targets.forEach((target, i) => {
      const u = units[i] ?? 0;
      this.bucket(this.itemBuckets, itemId(target), this.options.itemWcuPerSecond, now).take(u);
      this.bucket(this.partitionBuckets, partitionId(target), this.options.partitionWcuPerSecond, now).take(u);
      total += u;
    });
    this.consumedWcu += total;
    return total;
  }

  private bucket(buckets: Map<string, CapacityBucket>, id: string, perSecond: number, now: number): CapacityBucket {
    let bucket = buckets.get(id);
    if (!bucket) buckets.set(id, (bucket = new CapacityBucket(perSecond, now)));
    return bucket;
  }
}
