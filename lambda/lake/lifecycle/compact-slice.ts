import { type AsyncBuffer, type FileMetaData, parquetMetadataAsync } from 'hyparquet';
import { DEFAULT_ROWS_PER_BATCH } from '../../datasets/column-batches.js';
import { type DatasetName, type DatasetSpec, SPANS, TRACES } from '../../datasets/registry.js';
import { bucketAlignedParts, isBucketAligned, partOf, partOrders } from '../../datasets/hash-parts.js';
import { ParquetStreamWriter } from '../../datasets/parquet/parquet-writer.js';
import { rawPartitionPrefix } from '../keys/partition.js';
import { type Slice, compactedObjectKey, compactedSlicePrefix, generationOfCompactedKey, manifestKey, partPlanPrefix, sliceId } from '../keys/compacted-keys.js';
import { type DatasetManifest, type ManifestErasure, nextManifest, type SliceManifest, parseManifest, serializeManifest } from '../manifest.js';
import { type Row, readRowGroups, retainShare, rowBatches, shapeOf } from './parquet-rows.js';
import { streamedObject } from './streamed-object.js';
import { type MatchedTraces, deleteOverflowOf, matchedTraces } from './matched-traces.js';
import { type SeenIds, noneSeen } from './seen-ids.js';
import { dropHourIndex } from './hour-index.js';
import { expireHour } from './expire-hour.js';
import type { CompactionDeps, ErasedHour, SliceErasure, StoredObject } from '../ports.js';
import { READERS_GRACE_MS } from '../readers-grace.js';

export const DEFAULT_ROWS_PER_PART = 250_000;
export const DEFAULT_BYTES_PER_PART = 32 * 1024 * 1024;

export interface SliceCompaction {
  slice: Slice;
  /** `compacted` when a new generation was switched in, `cleaned` when only expired generations were deleted. */
  outcome: 'compacted' | 'up-to-date' | 'cleaned';
  generation: number;
  /** Rows in the new generation, per dataset (unchanged datasets included). */
  rows: Record<DatasetName, number>;
  /** Rows read from the inputs that were rewritten, before deduplication. */
  rowsRead: number;
  duplicatesDropped: number;
  /** Compacted objects written: one per dataset rewritten. */
  objectsWritten: number;
  /** Hash parts the rewritten datasets were cut into (each part is row groups of its dataset's one object). */
  hashParts: number;
  objectsDeleted: number;
  /** Rows an erasure removed (each row once, however many copies the inputs held); absent when none. */
  rowsErased?: number;
  /** Bytes of the objects written when an erasure rewrote the slice. */
  bytesRewritten?: number;
}

const SPECS: Record<DatasetName, DatasetSpec> = { traces: TRACES, spans: SPANS };
const PARQUET = 'application/vnd.apache.parquet';

export { partOf };

const rowKey: Record<DatasetName, (row: Row) => string> = {
  traces: (row) => row.trace_id as string,
  spans: (row) => `${row.trace_id as string}\n${row.span_id as string}`,
};

/** A row and where it came from, for the winner rule. */
interface Candidate {
  row: Row;
  input: number;
  index: number;
}

/**
 * Which copy of a row wins: the latest `received_at` (the newest accepted version of the trace), then
 * the greater `request_id`, then the later input (inputs are the previous generation first, then raw
 * objects in key order) and row. Copies that tie up to `request_id` come from the same request, so
 * they hold the same values; the last two keys only make the choice deterministic.
 */
export function wins(a: Candidate, b: Candidate): boolean {
  const ra = a.row.received_at as bigint;
  const rb = b.row.received_at as bigint;
  if (ra !== rb) return ra > rb;
  const qa = a.row.request_id as string;
  const qb = b.row.request_id as string;
  if (qa !== qb) return qa > qb;
  return a.input !== b.input ? a.input > b.input : a.index > b.index;
}

const compare = (a: string | bigint | number, b: string | bigint | number) => (a < b ? -1 : a > b ? 1 : 0);

/** Output order: by timestamp, then the row's identity, so the same inputs always give the same bytes. */
const rowOrder: Record<DatasetName, (a: Row, b: Row) => number> = {
  traces: (a, b) => compare(a.timestamp as bigint, b.timestamp as bigint) || compare(a.trace_id as string, b.trace_id as string),
  spans: (a, b) =>
    compare(a.timestamp as bigint, b.timestamp as bigint) ||
    compare(a.trace_id as string, b.trace_id as string) ||
    compare(a.span_index as number, b.span_index as number) ||
    compare(a.span_id as string, b.span_id as string),
};

interface DatasetResult {
  manifest: DatasetManifest;
  rowsRead: number;
  parts: number;
}

/** An input ready to read: its bytes, and its footer when already parsed. */
interface OpenedInput {
  file: AsyncBuffer;
  metadata?: FileMetaData;
}

/**
 * Bytes of its inputs a part worker keeps in memory across its hash parts (see {@link retainShare}): with the
 * planner's 320 MiB of listed input per worker, a worker's range of hash-ordered inputs fits, so each input is read
 * once per worker instead of once per hash part. Past it, inputs are read again for each hash part, as one worker does.
 */
export const DEFAULT_RETAINED_INPUT_BYTES = 512 * 1024 * 1024;

/**
 * Which rows one pass reads: hash part `part` of `parts` (every row when `parts` is 1), and the hash orders a
 * hash-ordered input's row groups must meet to be decoded at all (undefined: every row group).
 */
interface PartFilter {
  part: number;
  parts: number;
  wanted: [number, number] | undefined;
}

/** What a rewrite notes about the rows it reads: the ids they hold (for the erasure index), and the rows an erasure drops. */
export interface RowWatch {
  erased?: ErasedRows;
  seen?: SeenIds;
}

/** Rows an erasure drops while a dataset is rewritten: the trace ids, and what dropping them found. */
export interface ErasedRows {
  traceIds: ReadonlySet<string>;
  /** Row identities dropped (each counted once however many copies the inputs held). */
  keys: Set<string>;
  /** Of those, how many per trace id: each request is told of the rows of the traces it matched. */
  rowsByTrace: Map<string, number>;
  /** Rows read and dropped, copies included. */
  read: number;
}

/** Reads every input once for one part, keeping only that part's winning rows; each input is released once read. */
async function partRows(dataset: DatasetName, openInput: (input: number) => Promise<OpenedInput>, inputs: number, { part, parts, wanted }: PartFilter, watch: RowWatch = {}): Promise<{ rows: Row[]; read: number }> {
  const { erased, seen } = watch;
  const winners = new Map<string, Candidate>();
  const keyOf = rowKey[dataset];
  let read = 0;
  for (let input = 0; input < inputs; input++) {
    let index = 0;
    const opened = await openInput(input);
    for await (const group of readRowGroups(opened.file, SPECS[dataset], wanted, opened.metadata)) {
      for (const row of group) {
        const at = index++;
        if (parts > 1 && partOf(row.trace_id as string, parts) !== part) continue;
        read++;
        const key = keyOf(row);
        if (erased?.traceIds.has(row.trace_id as string)) {
          if (!erased.keys.has(key)) {
            erased.keys.add(key);
            erased.rowsByTrace.set(row.trace_id as string, (erased.rowsByTrace.get(row.trace_id as string) ?? 0) + 1);
          }
          erased.read++;
          continue;
        }
        if (seen) {
          seen.traces.add(row.trace_id as string);
          if (typeof row.user_id === 'string') seen.users.add(row.user_id);
          if (typeof row.session_id === 'string') seen.sessions.add(row.session_id);
        }
        const current = winners.get(key);
        const candidate = { row, input, index: at };
        if (!current || wins(candidate, current)) winners.set(key, candidate);
      }
    }
  }
  const rows = Array.from(winners.values(), (candidate) => candidate.row).sort(rowOrder[dataset]);
  winners.clear();
  return { rows, read };
}

/**
 * The share of a slice's rows one object holds: hash part `part` of `parts` of the hour (a part worker's range),
 * or the whole hour (`WHOLE_SLICE`).
 */
export interface SliceShare {
  part: number;
  parts: number;
}

export const WHOLE_SLICE: SliceShare = { part: 0, parts: 1 };

/**
 * The hash parts one object of `share` is written in, one after another: `needed` sub-parts of the share, as hash
 * parts `share.part + share.parts * j` of `share.parts * subParts` (a row in hash part h of P is in part h mod W of
 * W whenever W divides P, so the sub-parts of part w hold exactly the rows of part w).
 */
function subPartFilters(share: SliceShare, needed: number, hashOrdered: boolean): PartFilter[] {
  // A power of two lets each part skip the row groups of hash-ordered inputs, but every extra part decodes the
  // other inputs whole once more (small landed groups, objects of older versions, the previous generation):
  // rounded up only when most rows can be skipped, so an hour near the worker's limit is not pushed past it.
  const parts = hashOrdered ? bucketAlignedParts(needed * share.parts) : needed * share.parts;
  const shareOrders = share.parts > 1 && isBucketAligned(share.parts) ? partOrders(share.part, share.parts) : undefined;
  return Array.from({ length: parts / share.parts }, (_, j) => {
    const part = share.part + share.parts * j;
    // With a bucket-aligned part count, row groups of hash-ordered inputs outside this part are not even decoded.
    const wanted = parts > 1 && isBucketAligned(parts) ? partOrders(part, parts) : shareOrders;
    return { part, parts, wanted };
  });
}

/** What writing one compacted object did. */
export interface WrittenObject {
  rows: number;
  rowsRead: number;
  /** Hash parts it was written in, one after another. */
  parts: number;
  /** Bytes of the object written. */
  bytes: number;
}

/**
 * Writes one compacted object under `key` from `inputs` (read in this order, which the winner rule uses): the
 * rows of `share`, part after part (see {@link CompactionDeps.rowsPerPart}), each part's rows as row groups of one
 * Parquet file that is uploaded as it is encoded (see {@link streamedObject}), so neither the rows nor the file
 * are ever held whole. A failure aborts the upload; the object appears only when it is complete. The same inputs
 * and share always give the same bytes.
 */
export async function writeCompactedObject(
  deps: CompactionDeps,
  dataset: DatasetName,
  key: string,
  inputs: readonly StoredObject[],
  share: SliceShare = WHOLE_SLICE,
  watch?: RowWatch,
): Promise<WrittenObject> {
  const bytesPerPart = deps.bytesPerPart ?? DEFAULT_BYTES_PER_PART;
  const totalBytes = inputs.reduce((sum, object) => sum + object.size, 0);
  // Holding every input open is what made memory grow with the hour: only a small slice's inputs stay held.
  const held = totalBytes <= bytesPerPart ? await Promise.all(inputs.map((object) => deps.store.open(object))) : undefined;
  // A part worker keeps what its range needs of each input read whole (one GET), up to a budget; see retainShare.
  const retain = !held && share.parts > 1 && isBucketAligned(share.parts) ? { orders: partOrders(share.part, share.parts), budget: deps.retainedInputBytes ?? DEFAULT_RETAINED_INPUT_BYTES } : undefined;
  const retained: (OpenedInput | undefined)[] = [];
  const openInput = async (input: number): Promise<OpenedInput> => retained[input] ?? { file: held ? held[input]! : await deps.store.open(inputs[input]!) };
  let totalRows = 0;
  let hashOrderedRows = 0;
  for (let input = 0; input < inputs.length; input++) {
    const { file } = await openInput(input);
    const metadata = await parquetMetadataAsync(file);
    const shape = shapeOf(metadata);
    totalRows += shape.rows;
    if (shape.hashOrdered) hashOrderedRows += shape.rows;
    if (retain && file instanceof ArrayBuffer) {
      const kept = retainShare(file, metadata, retain.orders, () => deps.store.open(inputs[input]!));
      if (kept.bytes <= retain.budget) {
        retained[input] = { file: kept.file, metadata };
        retain.budget -= kept.bytes;
      }
    }
  }
  // The share's rows and bytes, as the hash spreads them: a share of 1/W of the hour holds ~1/W of both.
  const needed = Math.max(1, Math.ceil(totalRows / share.parts / (deps.rowsPerPart ?? DEFAULT_ROWS_PER_PART)), Math.ceil(totalBytes / share.parts / bytesPerPart));
  const filters = subPartFilters(share, needed, hashOrderedRows * 2 >= totalRows);
  const file = new ParquetStreamWriter(SPECS[dataset]);
  const upload = streamedObject(deps.store, key, PARQUET, deps.uploadPartBytes);
  let rowsRead = 0;
  let bytes = 0;
  try {
    for (const filter of filters) {
      deps.collectGarbage?.();
      const result = await partRows(dataset, openInput, inputs.length, filter, watch);
      rowsRead += result.read;
      for (const batch of rowBatches(SPECS[dataset], result.rows, deps.rowsPerRowGroup ?? DEFAULT_ROWS_PER_BATCH)) {
        file.write(batch);
        const chunk = file.take();
        bytes += chunk.byteLength;
        await upload.write(chunk);
      }
      // Emptied, not just left behind: the suspended async frame keeps this part's array reachable until the
      // next part's rows replace it, which would hold two parts' rows at once.
      result.rows.length = 0;
    }
    const last = file.finish();
    bytes += last.byteLength;
    await upload.end(last);
  } catch (error) {
    await upload.abort().catch((abortError: unknown) => deps.logger?.error('Could not abort the upload of a compacted object; the bucket lifecycle rule aborts it within a day', { key, error: abortError }));
    throw error;
  }
  return { rows: file.rows, rowsRead, parts: filters.length, bytes };
}

/** The inputs of a rewrite, in the order the winner rule counts them: the previous generation's objects, then the raw objects by key. */
export function compactionInputs(previous: readonly StoredObject[], pending: readonly StoredObject[]): StoredObject[] {
  return [...previous, ...[...pending].sort((a, b) => compare(a.key, b.key))];
}

/**
 * Rewrites one dataset of a slice from the previous generation's objects and the raw objects not yet covered,
 * into one object (see {@link writeCompactedObject}), leaving out the rows of `erased` traces.
 */
async function compactDataset(
  deps: CompactionDeps,
  dataset: DatasetName,
  slice: Slice,
  generation: number,
  previous: readonly StoredObject[],
  pending: readonly StoredObject[],
  raw: readonly StoredObject[],
  erasedTraceIds?: ReadonlySet<string>,
): Promise<DatasetResult & { bytes: number; erased: ErasedRows | undefined; seen: SeenIds | undefined }> {
  const key = compactedObjectKey(dataset, slice, generation);
  const erased: ErasedRows | undefined = erasedTraceIds && erasedTraceIds.size > 0 ? { traceIds: erasedTraceIds, keys: new Set(), rowsByTrace: new Map(), read: 0 } : undefined;
  const seen = deps.erasures?.indexHour ? noneSeen() : undefined;
  const written = await writeCompactedObject(deps, dataset, key, compactionInputs(previous, pending), WHOLE_SLICE, { ...(erased ? { erased } : {}), ...(seen ? { seen } : {}) });
  return { manifest: { files: [key], rows: written.rows, covered: raw.map(({ key, etag }) => ({ key, etag })) }, rowsRead: written.rowsRead, parts: written.parts, bytes: written.bytes, erased, seen };
}

/** Raw objects of the slice the manifest does not cover with their current ETag (new, or overwritten since). */
function pendingRaw(raw: readonly StoredObject[], covered: DatasetManifest | undefined): StoredObject[] {
  const etags = new Map((covered?.covered ?? []).map((entry) => [entry.key, entry.etag]));
  return raw.filter((object) => etags.get(object.key) !== object.etag);
}

/** What a slice's manifest leaves to do: per dataset the raw objects it does not cover, and which replaced generations are past their grace period. */
export interface SliceWork {
  pending: Record<DatasetName, StoredObject[]>;
  /** Replaced generations no query can still be reading: their objects are deleted. */
  expired: SliceManifest['superseded'];
  /** Replaced generations still in their grace period. */
  kept: SliceManifest['superseded'];
}

/** The work a slice holds, from its manifest (if any) and its raw listing: what both the planner and {@link compactSlice} decide from. */
export function sliceWork(previous: SliceManifest | undefined, listing: Record<DatasetName, StoredObject[]>, nowMs: number, graceMs: number): SliceWork {
  const superseded = previous?.superseded ?? [];
  const isExpired = (entry: SliceManifest['superseded'][number]) => Date.parse(entry.superseded_at) + graceMs <= nowMs;
  return {
    pending: { traces: pendingRaw(listing.traces, previous?.traces), spans: pendingRaw(listing.spans, previous?.spans) },
    expired: superseded.filter(isExpired),
    kept: superseded.filter((entry) => !isExpired(entry)),
  };
}

/** A slice's outcome before any work: up to date at the manifest's generation, with its rows, nothing read or written. */
export function upToDate(slice: Slice, previous: SliceManifest | undefined): SliceCompaction {
  return {
    slice,
    outcome: 'up-to-date',
    generation: previous?.generation ?? 0,
    rows: { traces: previous?.traces.rows ?? 0, spans: previous?.spans.rows ?? 0 },
    rowsRead: 0,
    duplicatesDropped: 0,
    objectsWritten: 0,
    hashParts: 0,
    objectsDeleted: 0,
  };
}

/**
 * Compacts one slice: per dataset, the previous generation's objects and the raw objects it does not cover are
 * merged, deduplicated (see {@link wins}) and written as a new generation, then one PUT of the manifest
 * switches readers to it. Idempotent and safe to kill anywhere: before the switch, nothing readers use has
 * changed (the new generation's keys are named by no manifest yet, and a rerun writes the same keys); after it,
 * what is left is in the manifest: unreferenced objects to delete, and for a rewrite that applied erasure requests,
 * its record (raw objects to delete, what it removed per request), which the next run finishes from before anything
 * else (see {@link finishSwitch}).
 *
 * `raw` is the slice's raw listing when the caller already has it.
 */
export async function compactSlice(deps: CompactionDeps, slice: Slice, raw?: Record<DatasetName, StoredObject[]>): Promise<SliceCompaction> {
  const now = (deps.now ?? (() => new Date()))();
  const grace = deps.supersededGraceMs ?? READERS_GRACE_MS;
  const manifestBytes = await deps.store.get(manifestKey(slice));
  const previous = manifestBytes ? parseManifest(manifestBytes, slice) : undefined;
  let requests = await deps.erasures?.forSlice(slice);
  let resumedDeletions = 0;
  const record = previous?.erasure;
  if (previous && record && requests?.applying.some((id) => Object.hasOwn(record.rows_removed, id))) {
    // The run that switched to this generation stopped before it recorded every outcome: those requests are done
    // here from its record. Looked at again, the hour would show nothing of them (the rewrite removed it) and their
    // outcome would say 0 rows; and without raw objects it would leave the replaced generation, which holds the rows.
    const finished = await finishSwitch(deps, slice, previous, requests.applying);
    resumedDeletions = finished.objectsDeleted;
    requests = { ...requests, applying: requests.applying.filter((id) => !finished.recorded.includes(id)) };
    raw = undefined;
  }
  const listing = raw ?? { traces: await deps.store.list(rawPartitionPrefix('traces', slice)), spans: await deps.store.list(rawPartitionPrefix('spans', slice)) };
  const { pending, expired, kept } = sliceWork(previous, listing, now.getTime(), grace);
  const erasure = requests ? await sliceErasure(deps, slice, requests, previous, listing, pending) : undefined;
  const result = upToDate(slice, previous);
  result.objectsDeleted = resumedDeletions;
  const erasing = erasure !== undefined && erasure.matched.traceIds.size > 0;
  if (pending.traces.length === 0 && pending.spans.length === 0 && !erasing) {
    if (erasure && erasure.applying.length > 0) {
      // No manifest and no raw objects: retention's first step deleted the hour, and its compacted objects (which
      // may hold the user) wait for the second. The erasure deletes them now, as that step would.
      const swept = !previous && listing.traces.length === 0 && listing.spans.length === 0 ? await expireHour(deps.store, { slice, deleteCompacted: true }) : undefined;
      // A replaced generation no manifest names may hold the rows: a switch by an earlier version that stopped
      // before its deletes left it, and nothing else would ever delete it.
      const stale = previous ? await deleteUnreferenced(deps, slice, previous.traces.files.concat(previous.spans.files), previous.superseded, previous.generation) : 0;
      result.objectsDeleted += stale;
      const outcome: ErasedHour = { rowsRemoved: 0, bytesRewritten: 0, bytesOfHour: erasure.bytesOfHour, objectsDeleted: (swept?.objectsDeleted ?? 0) + stale };
      await deps.erasures!.recordHour(slice, new Map(erasure.applying.map((id) => [id, outcome])));
    }
    if (!previous || expired.length === 0) return resumedDeletions > 0 ? { ...result, outcome: 'cleaned' } : result;
    // Nothing new: only drop generations no query can still be reading.
    await deps.store.put(manifestKey(slice), serializeManifest({ ...previous, superseded: kept }), 'application/json');
    result.objectsDeleted += await deleteUnreferenced(deps, slice, previous.traces.files.concat(previous.spans.files), kept, previous.generation);
    return { ...result, outcome: 'cleaned' };
  }

  const generation = (previous?.generation ?? 0) + 1;
  const compacted: Partial<Record<DatasetName, DatasetManifest>> = {};
  const replaced: string[] = [];
  const erasedRowsByTrace = new Map<string, number>();
  let rowsErased = 0;
  let bytesRewritten = 0;
  const seen: Partial<Record<DatasetName, SeenIds>> = {};
  for (const dataset of ['traces', 'spans'] as const) {
    const before = previous?.[dataset];
    if (pending[dataset].length === 0 && before && !erasing) {
      compacted[dataset] = { ...before, covered: listing[dataset].map(({ key, etag }) => ({ key, etag })) };
      continue;
    }
    const previousObjects = erasure?.previous[dataset] ?? (before ? await currentObjects(deps, dataset, slice, before.files) : []);
    const done = await compactDataset(deps, dataset, slice, generation, previousObjects, pending[dataset], listing[dataset], erasure?.matched.traceIds);
    if (done.erased) {
      rowsErased += done.erased.keys.size;
      for (const [traceId, rows] of done.erased.rowsByTrace) erasedRowsByTrace.set(traceId, (erasedRowsByTrace.get(traceId) ?? 0) + rows);
    }
    // A raw object that held an erased row is deleted below; no longer covered, it is compacted again if a replay lands it anew.
    compacted[dataset] = { ...done.manifest, covered: done.manifest.covered.filter((entry) => !erasure?.matched.holders.has(entry.key)) };
    replaced.push(...(before?.files ?? []));
    if (done.seen) seen[dataset] = done.seen;
    bytesRewritten += done.bytes;
    result.rowsRead += done.rowsRead;
    result.duplicatesDropped += done.rowsRead - done.manifest.rows - (done.erased?.read ?? 0);
    result.objectsWritten++;
    result.hashParts += done.parts;
  }
  // Overflow objects are read by no reader, only by the landing of their record (which the erasure drops anyway):
  // they go before the switch, while the matched traces are known. After it no object holds those traces, so a
  // retry could not find their overflow objects.
  const overflowDeleted = erasing ? await deleteOverflowOf(deps.store, slice.orgId, erasure.matched) : 0;
  result.objectsDeleted += overflowDeleted;
  const applied = erasure && (erasing || erasure.applying.length > 0) ? erasureRecord(erasure, erasedRowsByTrace, erasing ? { bytesRewritten, previous, overflowDeleted } : undefined) : undefined;
  // An erasure keeps no earlier generation for queries in flight: those objects hold the erased rows.
  const manifest: SliceManifest = {
    ...nextManifest(slice, generation, { traces: compacted.traces!, spans: compacted.spans! }, erasing ? undefined : previous, { kept: erasing ? [] : kept, replaced }, now),
    ...(applied ? { erasure: applied } : {}),
  };
  // The hour index describes the previous generation: dropped before the switch, a kill before the new one is
  // written leaves the hour unindexed (searched by every erasure), never indexed without this generation's ids.
  await dropHourIndex(deps.store, slice);
  // The switch: one PUT of one object. Before it readers use the previous generation, after it this one.
  await deps.store.put(manifestKey(slice), serializeManifest(manifest), 'application/json');
  result.objectsDeleted += (await finishSwitch(deps, slice, manifest, erasure?.applying ?? [], seen)).objectsDeleted;
  return { ...result, outcome: 'compacted', generation, rows: { traces: manifest.traces.rows, spans: manifest.spans.rows }, ...(erasing ? { rowsErased, bytesRewritten } : {}) };
}

/**
 * What a rewrite applying `erasure`'s requests removes, per request: the rows of the traces each matched. `erased`
 * undefined: nothing matched, so nothing was rewritten for them.
 */
function erasureRecord(
  erasure: HourErasure,
  rowsByTrace: ReadonlyMap<string, number>,
  erased: { bytesRewritten: number; previous: SliceManifest | undefined; overflowDeleted: number } | undefined,
): ManifestErasure {
  const removed = new Map(erasure.applying.map((id) => [id, 0]));
  for (const [traceId, rows] of rowsByTrace) {
    for (const id of erasure.matched.requestsOf.get(traceId) ?? []) if (removed.has(id)) removed.set(id, removed.get(id)! + rows);
  }
  const previous = erased?.previous;
  const generations = previous ? previous.traces.files.length + previous.spans.files.length + previous.superseded.reduce((sum, entry) => sum + entry.files.length, 0) : 0;
  const holders = erased ? [...erasure.matched.holders].sort() : [];
  return {
    rows_removed: Object.fromEntries(removed),
    bytes_rewritten: erased?.bytesRewritten ?? 0,
    bytes_of_hour: erasure.bytesOfHour,
    objects_deleted: erased ? generations + holders.length + erased.overflowDeleted : 0,
    raw_holders: holders,
  };
}

/**
 * The steps after a switch to `manifest`, in this order: delete what neither it nor a generation in its grace
 * names; delete the raw objects its erasure record names; index the hour (when the rewrite's `seen` ids are at
 * hand); record, for each request of `applying` the record names, its outcome as the record says. Run right after
 * the switch, and by the next run of the slice when the record names a request still applying (the run that
 * switched stopped before it was done): every step is safe to repeat.
 */
async function finishSwitch(deps: CompactionDeps, slice: Slice, manifest: SliceManifest, applying: readonly string[], seen: Partial<Record<DatasetName, SeenIds>> = {}): Promise<{ objectsDeleted: number; recorded: string[] }> {
  let objectsDeleted = await deleteUnreferenced(deps, slice, manifest.traces.files.concat(manifest.spans.files), manifest.superseded, manifest.generation);
  const record = manifest.erasure;
  if (record && record.raw_holders.length > 0) {
    await deps.store.delete(record.raw_holders);
    objectsDeleted += record.raw_holders.length;
  }
  for (const dataset of ['traces', 'spans'] as const) {
    const ids = seen[dataset];
    if (ids) await deps.erasures!.indexHour!(slice, dataset, ids);
  }
  const recorded = record ? applying.filter((id) => Object.hasOwn(record.rows_removed, id)) : [];
  if (record && recorded.length > 0) {
    const outcome = (id: string): ErasedHour => ({ rowsRemoved: record.rows_removed[id]!, bytesRewritten: record.bytes_rewritten, bytesOfHour: record.bytes_of_hour, objectsDeleted: record.objects_deleted });
    await deps.erasures!.recordHour(slice, new Map(recorded.map((id) => [id, outcome(id)])));
  }
  return { objectsDeleted, recorded };
}

/** The erasures of a slice as a rewrite applies them. */
interface HourErasure {
  applying: string[];
  /** The traces they match in what the rewrite reads (the whole hour when a request applies, else what is new). */
  matched: MatchedTraces;
  /** The previous generation's objects as listed now. */
  previous: Record<DatasetName, StoredObject[]>;
  bytesOfHour: number;
}

/** The erasures of a slice and the traces they match in what a rewrite would read. */
async function sliceErasure(
  deps: CompactionDeps,
  slice: Slice,
  found: SliceErasure,
  previous: SliceManifest | undefined,
  listing: Record<DatasetName, StoredObject[]>,
  pending: Record<DatasetName, StoredObject[]>,
): Promise<HourErasure> {
  const previousObjects: Record<DatasetName, StoredObject[]> = {
    traces: previous ? await currentObjects(deps, 'traces', slice, previous.traces.files) : [],
    spans: previous ? await currentObjects(deps, 'spans', slice, previous.spans.files) : [],
  };
  // With a request to apply, the whole hour is looked at, raw objects already covered included (they are deleted
  // if they hold a matched trace); else only what is new (the compacted generation was looked at when it was
  // written, so it holds nothing that a request already done matches).
  const raw = found.applying.length > 0 ? listing : pending;
  const scanned = found.applying.length > 0 ? { traces: [...previousObjects.traces, ...raw.traces], spans: [...previousObjects.spans, ...raw.spans] } : pending;
  const matched = await matchedTraces(deps.store, scanned, found.matching, new Set([...raw.traces, ...raw.spans].map((object) => object.key)));
  // The hour's data held once: its compacted generation and what is not compacted yet (covered raw copies left out).
  const bytesOfHour = [...previousObjects.traces, ...previousObjects.spans, ...pending.traces, ...pending.spans].reduce((sum, object) => sum + object.size, 0);
  return { applying: found.applying, matched, previous: previousObjects, bytesOfHour };
}

/** The previous generation's objects as listed now (their ETags pin the reads). */
export async function currentObjects(deps: CompactionDeps, dataset: DatasetName, slice: Slice, files: readonly string[]): Promise<StoredObject[]> {
  const listed = new Map((await deps.store.list(compactedSlicePrefix(dataset, slice))).map((object) => [object.key, object]));
  return files.map((key) => {
    const object = listed.get(key);
    if (!object) throw new Error(`compacted object ${key} named by the manifest of ${sliceId(slice)} is missing`);
    return object;
  });
}

/**
 * Deletes compacted objects of the slice that neither the manifest nor a generation in its grace period names, and
 * the part plans already switched in or given up. Objects and plans of a generation above the manifest's are left
 * alone: they are a part plan in progress (its part workers run outside the slice's message group), and they are
 * deleted here once the slice's generation has reached theirs (switched in, or replaced by another run).
 */
export async function deleteUnreferenced(deps: CompactionDeps, slice: Slice, current: readonly string[], superseded: SliceManifest['superseded'], generation: number): Promise<number> {
  const keep = new Set([...current, ...superseded.flatMap((entry) => entry.files)]);
  const inProgress = (key: string) => (generationOfCompactedKey(key) ?? 0) > generation;
  const stale: string[] = [];
  for (const prefix of [compactedSlicePrefix('traces', slice), compactedSlicePrefix('spans', slice), partPlanPrefix(slice)]) {
    for (const object of await deps.store.list(prefix)) if (!keep.has(object.key) && !inProgress(object.key)) stale.push(object.key);
  }
  if (stale.length > 0) await deps.store.delete(stale);
  return stale.length;
}
