/**
 * The ports of the lake: the data bucket as an hour's lifecycle (compact, erase, expire) needs it, its log, and
 * everything `compactSlice` is given, the erasures it applies included. `S3LakeStore` implements the store;
 * tests and the bench give in-memory buckets. The lake knows erasure only through {@link SliceErasures}: which
 * requests to apply to an hour (by id) and whether a row matches one; what a request is lives in lambda/erasure/.
 */
import type { AsyncBuffer } from 'hyparquet';
import type { StructuredLogger } from '../shared/runtime/logger.js';
import type { Slice } from './keys/compacted-keys.js';
import type { SeenIds } from './lifecycle/seen-ids.js';
import type { DatasetName } from '../datasets/registry.js';

/** An object as listed: its key, its ETag (which changes when it is overwritten) and its size. */
export interface StoredObject {
  key: string;
  etag: string;
  size: number;
}

/** The data bucket as compaction needs it. */
export interface LakeStore {
  /** Every object under `prefix`. */
  list(prefix: string): Promise<StoredObject[]>;
  /** The object's bytes, or undefined when it does not exist. */
  get(key: string): Promise<Uint8Array | undefined>;
  /** The object as a byte source for the Parquet reader; reads fail if it no longer has the listed ETag. */
  open(object: StoredObject): Promise<AsyncBuffer>;
  /** Writes an object whole in one request. */
  put(key: string, body: Uint8Array, contentType: string): Promise<void>;
  /** Starts a multipart upload of `key` and returns its upload id; nothing is visible under the key until it completes. */
  createMultipartUpload(key: string, contentType: string): Promise<string>;
  /** Uploads part `partNumber` (1-based) and returns how completion must name it; every part but the last must be at least 5 MiB (S3). */
  uploadPart(key: string, uploadId: string, partNumber: number, body: Uint8Array): Promise<UploadedPart>;
  /** Makes the object of these parts, in this order, visible under `key` at once. */
  completeMultipartUpload(key: string, uploadId: string, parts: readonly UploadedPart[]): Promise<void>;
  /** Drops an upload and its parts; the object under `key`, if any, is untouched. */
  abortMultipartUpload(key: string, uploadId: string): Promise<void>;
  delete(keys: readonly string[]): Promise<void>;
}

/** A part of a multipart upload, as CompleteMultipartUpload names it. */
export interface UploadedPart {
  partNumber: number;
  etag: string;
  /** The part's CRC32 (base64) where the store checksums parts: an upload created with a checksum algorithm must name each part's checksum at completion. */
  checksumCrc32?: string;
}

export type CompactionLogger = Pick<StructuredLogger, 'info' | 'error'>;

export interface CompactionDeps {
  store: LakeStore;
  logger?: CompactionLogger;
  now?: () => Date;
  /**
   * Most input rows (before deduplication) per part: a larger slice is split into ceil(rows / rowsPerPart)
   * parts by a hash of `trace_id`, and only one part's rows are held at a time. Every part goes into the same
   * compacted object, as its own row groups.
   */
  rowsPerPart?: number;
  /**
   * Most input bytes (the listed sizes of the compressed Parquet inputs) per part: the slice is also split into
   * ceil(bytes / bytesPerPart) parts, so a part's decoded rows stay bounded however wide its rows are.
   * Inputs are held open across parts only while their total is within this budget; else each part reopens them.
   */
  bytesPerPart?: number;
  rowsPerRowGroup?: number;
  /** Bytes of its inputs a part worker keeps across its hash parts (default `DEFAULT_RETAINED_INPUT_BYTES`). */
  retainedInputBytes?: number;
  /** Bytes per part of the multipart upload of a compacted object (at least S3's 5 MiB); a smaller object is one PUT. */
  uploadPartBytes?: number;
  /**
   * A full garbage collection (`globalThis.gc` under `--expose-gc`), run before each part is read: the previous
   * part's rows are garbage by then, but V8 may not collect them until the next part's rows are built too, which
   * nearly doubled the 1,000,000-span hour's peak RSS (1.9–2.1 GB instead of ~1.07 GB). Cheap then: little is live.
   */
  collectGarbage?: () => void;
  /** How long a replaced generation's objects are kept for queries that started before the switch. */
  supersededGraceMs?: number;
  /** The erasure requests of a slice's organization; without it nothing is erased (lambda/erasure/ implements it). */
  erasures?: SliceErasures;
}

/** The erasures that apply to one slice, as compaction asks for them before it rewrites the slice. */
export interface SliceErasures {
  /** Undefined when the slice's organization has no erasure request at all (the common case: one LIST). */
  forSlice(slice: Slice): Promise<SliceErasure | undefined>;
  /** Records, per request id, what rewriting the slice removed for it: the hour is then done for each of them. */
  recordHour(slice: Slice, removed: ReadonlyMap<string, ErasedHour>): Promise<void>;
  /** Keeps the index of the ids a dataset of a slice holds once a generation of it is switched in (finding an erasure's hours reads it). */
  indexHour?(slice: Slice, dataset: DatasetName, seen: SeenIds): Promise<void>;
}

export interface SliceErasure {
  /** Ids of the requests not done whose outcome for this hour is not recorded yet: the whole hour is checked and rewritten for them. */
  applying: string[];
  /** The ids of the organization's requests a row matches (pending, running, or done through their keyed hashes); empty for a row none matches. */
  matching: (row: MatchFields) => readonly string[];
}

/** What erasing one hour did for one request. */
export interface ErasedHour {
  /** Rows of the traces this request matched, each row once (a trace two requests matched counts for both). */
  rowsRemoved: number;
  /** Bytes the hour's rewrite wrote: one rewrite applies every request it found applying, so they share it. */
  bytesRewritten: number;
  bytesOfHour: number;
  /** Objects deleted because they held erased rows (replaced generations, raw and overflow objects), for the whole rewrite. */
  objectsDeleted: number;
}

/** The fields of a row an erasure matches on. */
export interface MatchFields {
  trace_id: string;
  user_id: string;
  session_id: string;
  /** µs since the epoch. */
  received_at: bigint;
}

/**
 * One expired hour to delete. `deleteCompacted` false: its raw objects, then its manifest (after which no reader
 * sees the hour); true: its compacted objects and part plans, which only a run that found the hour without a
 * manifest asks for (see docs/operations.md "Retention").
 */
export interface HourExpiry {
  slice: Slice;
  deleteCompacted: boolean;
}
