import type * as Fs from 'node:fs';
import type { Crc32 } from './crc32.js';
import { Batch, type QueuedTrace } from './delivery.js';
import { isRecord } from './policy.js';

/**
 * When a trace handed over reaches the file: `interval` within `spoolIntervalMs` (write(2), no fsync: survives
 * `kill -9`); `write` before the call that handed it over returns; `fsync` that plus fsync (survives power loss).
 */
export type SpoolSync = 'interval' | 'write' | 'fsync';

export const SPOOL_MAGIC = 'TISPOOL2';
/** A segment rolls over at this size. */
export const SEGMENT_BYTES = 4 * 1024 * 1024;
const HEARTBEAT_MS = 10_000;
/** An owner that has not touched its file for this long is taken for dead even if its pid lives (pids are reused). */
const STALE_AFTER_MS = 60_000;
/** Spool owners alive in this process: an owner file with our pid but not in here was left by an earlier process. */
const OWNERS = Symbol.for('@trace-ingest/sdk.spool-owners');
// Shared by the ESM and the CommonJS build of this package, should a program load both.
const ownersInThisProcess = ((globalThis as Record<symbol, unknown>)[OWNERS] ??= new Set<string>()) as Set<string>;

const SEGMENT = /^([^.]+)\.(\d{8})\.seg$/;
const V1_BATCH = /^([^.]+)\.([^.]+)\.batch$/;
const OWNER = /^([^.]+)\.owner$/;
/** `writeAtomically`'s temporary file: `.<name>.<pid>.tmp`. */
const TEMPORARY = /^\..+\.(\d+)\.tmp$/;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface SpoolOptions {
  fs: typeof Fs;
  crc32: Crc32;
  sync?: SpoolSync;
  intervalMs?: number;
  /** Where a segment rolls over; default {@link SEGMENT_BYTES}. */
  segmentBytes?: number;
  /** Rate-limited by cause, like every other warning of the client. */
  warn?: (cause: string, message: string) => void;
}

/** What a start found in the spool, left by processes that died. */
export interface Recovered {
  /** Batches formed but without a final answer: resent with their key and bytes, oldest first. */
  batches: Batch[];
  /** Traces handed over, in no live batch and without a final answer: queued again, oldest first. */
  traces: QueuedTrace[];
  /** One per file whose last record is cut short or fails its CRC (the records before it are used). */
  tornRecords: number;
  /** Files that could not be read at all, renamed to `<name>.unreadable`. */
  unreadableFiles: number;
}

type SpoolRecord =
  | { t: 'trace'; id: string; trace: unknown }
  | { t: 'batch'; key: string; ids: string[]; body: string }
  | { t: 'done'; key: string | null; ids: string[] };

interface Claimed {
  /** The name it had (kept for a quarantined file), and the name it has now that it is ours. */
  original: string;
  file: string;
  /** Our segment number for a v2 segment; undefined for a v1 `.batch` file. */
  seq?: number;
}

/**
 * The opt-in write-ahead spool (Node only; format v2, shared with the Python SDK: docs/sdk.md). Every trace
 * handed over is appended as a checksummed record to a segment file (`<owner>.<seq>.seg`), each batch before its
 * first request, and a `done` record once traces have a final answer. A segment whose every record is done is
 * deleted, oldest first (a `done` record only ever refers to records in its own or older segments, so deleting
 * from the head never revives a trace that was answered). After `kill -9`, the next start on the directory claims
 * the dead owner's files (one atomic rename each) and gets back its live batches and traces. v1 `.batch` files
 * (`<owner>.<key>.batch`: a JSON header line, then the body) are still recovered.
 */
export class Spool {
  readonly owner = crypto.randomUUID().replaceAll('-', '');
  private readonly fs: typeof Fs;
  private readonly crc32: Crc32;
  private readonly sync: SpoolSync;
  private readonly intervalMs: number;
  private readonly segmentBytes: number;
  private readonly warn: (cause: string, message: string) => void;
  private fd: number | undefined;
  private seq = 0;
  private current: number | undefined;
  private currentBytes = 0;
  /** Live records per segment, in segment order (a Map keeps insertion order; segments are numbered upward). */
  private readonly live = new Map<number, number>();
  /** The segments holding each live record: `t:<trace id>` and `b:<key>`. */
  private readonly where = new Map<string, number[]>();
  private buffer: Uint8Array[] = [];
  /** With `interval`, traces handed over whose records are not made yet: the timer makes and writes them, off the caller's time. */
  private unframed: QueuedTrace[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly beat: ReturnType<typeof setInterval>;
  private lastBeat = 0;
  private broken = false;
  private closed = false;

  constructor(
    readonly directory: string,
    options: SpoolOptions,
  ) {
    this.fs = options.fs;
    this.crc32 = options.crc32;
    this.sync = options.sync ?? 'interval';
    this.intervalMs = options.intervalMs ?? 100;
    this.segmentBytes = options.segmentBytes ?? SEGMENT_BYTES;
    this.warn = options.warn ?? (() => undefined);
    this.fs.mkdirSync(directory, { recursive: true });
    this.writeAtomically(this.path(`${this.owner}.owner`), String(process.pid)); // throws for a directory we cannot write
    this.lastBeat = Date.now();
    ownersInThisProcess.add(this.owner);
    // The owner file stays fresh while this process lives, busy or idle, so no other process takes it for dead.
    this.beat = setInterval(() => this.heartbeat(), HEARTBEAT_MS);
    this.beat.unref?.();
  }

  /** Still writing (a disk that failed turns it off): what it was given is on disk, or will be by `close()`. */
  get usable(): boolean {
    return !this.broken;
  }

  heartbeat(): void {
    const now = Date.now();
    if (this.lastBeat && now - this.lastBeat < HEARTBEAT_MS) return;
    this.lastBeat = now;
    try {
      this.writeAtomically(this.path(`${this.owner}.owner`), String(process.pid));
    } catch (error) {
      this.warn('spool:heartbeat', `could not refresh the spool's owner file in ${this.directory}: ${String(error)}`);
    }
  }

  /** A trace handed over. */
  trace(item: QueuedTrace): void {
    if (this.broken || this.closed) return;
    if (this.sync !== 'interval') {
      this.appendTrace(item);
      return;
    }
    this.unframed.push(item);
    this.schedule();
  }

  private appendTrace(item: QueuedTrace): void {
    this.append([`{"t":"trace","id":${JSON.stringify(item.traceId)},"trace":`, item.data, '}'], `t:${item.traceId}`);
  }

  /** A batch about to be sent for the first time: on disk (with every record before it) before this returns. */
  batch(batch: Batch): void {
    this.frame();
    const record: SpoolRecord = { t: 'batch', key: batch.key, ids: [...batch.traceIds], body: decoder.decode(batch.body) };
    this.append([JSON.stringify(record)], `b:${batch.key}`);
    this.flush();
  }

  /** `key`'s batch is closed and `ids` have a final answer (delivered, rejected or dropped); on disk at once when `now`. */
  done(key: string | null, ids: readonly string[], now = false): void {
    if (this.broken || this.closed) return;
    this.frame(); // a trace's record before the done that closes it, and counted live before it is closed
    this.append([JSON.stringify({ t: 'done', key, ids: [...ids] } satisfies SpoolRecord)]);
    if (now) this.flush();
    if (key !== null) this.close1(`b:${key}`);
    for (const id of ids) this.close1(`t:${id}`);
    this.prune();
  }

  /** Writes the records not yet written (the `interval` setting keeps them in memory up to `intervalMs`). */
  flush(): void {
    this.frame();
    this.writeBuffer();
  }

  private writeBuffer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.buffer.length === 0 || this.fd === undefined) return;
    const data = this.buffer.length === 1 ? (this.buffer[0] as Uint8Array) : Buffer.concat(this.buffer);
    this.buffer = [];
    try {
      for (let at = 0; at < data.length; ) at += this.fs.writeSync(this.fd, data, at, data.length - at);
      if (this.sync === 'fsync') this.fs.fsyncSync(this.fd);
    } catch (error) {
      this.fail(error);
    }
  }

  /** Writes what is buffered; with nothing live, removes every file of ours (a clean close leaves none behind). */
  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    clearInterval(this.beat);
    this.closeSegment();
    // Closed, it no longer counts as alive here: a later client in this process may take what is left.
    ownersInThisProcess.delete(this.owner);
    if (this.live.size > 0 && !this.broken) return; // kept for the next start
    this.tryUnlink(this.path(`${this.owner}.owner`));
  }

  /**
   * Claims the files of owners that are gone (one atomic rename each, oldest first) and reads them back.
   * Never throws for a file: what cannot be read is quarantined and counted.
   */
  recover(): Recovered {
    const found: Recovered = { batches: [], traces: [], tornRecords: 0, unreadableFiles: 0 };
    const claimed = this.claimOrphans();
    const batches = new Map<string, { batch: Batch; seqs: number[]; v1Files: string[] }>();
    const traces = new Map<string, { trace: unknown; seqs: number[] }>();
    const doneKeys = new Set<string>();
    const doneIds = new Set<string>();
    for (const file of claimed) {
      const read = file.seq === undefined ? this.readV1(file) : this.readSegment(file);
      if (read === undefined) {
        found.unreadableFiles++;
        continue;
      }
      if (read.torn) found.tornRecords++;
      for (const record of read.records) {
        if (record.t === 'trace') {
          const entry = traces.get(record.id) ?? { trace: record.trace, seqs: [] };
          if (file.seq !== undefined) entry.seqs.push(file.seq);
          traces.set(record.id, entry);
        } else if (record.t === 'batch') {
          const entry = batches.get(record.key) ?? { batch: new Batch(record.key, record.ids, encoder.encode(record.body)), seqs: [], v1Files: [] };
          if (file.seq === undefined) entry.v1Files.push(file.file);
          else entry.seqs.push(file.seq);
          batches.set(record.key, entry);
        } else {
          if (record.key !== null) doneKeys.add(record.key);
          for (const id of record.ids) doneIds.add(id);
        }
      }
    }
    for (const file of claimed) if (file.seq !== undefined && this.fs.existsSync(file.file)) this.live.set(file.seq, 0);
    this.seq = Math.max(this.seq, ...claimed.map((file) => file.seq ?? 0));
    // A batch whose traces reappear in a later batch was split, its `done` lost in a crash: its parts stand for it.
    const lastBatchOf = new Map<string, string>();
    for (const [key, { batch }] of batches) if (!doneKeys.has(key)) for (const id of batch.traceIds) lastBatchOf.set(id, key);
    for (const [key, { batch }] of batches) if (batch.traceIds.some((id) => lastBatchOf.get(id) !== key)) doneKeys.add(key);
    const inLiveBatch = new Set<string>();
    for (const [key, { batch, seqs }] of batches) {
      if (doneKeys.has(key)) continue;
      found.batches.push(batch);
      for (const id of batch.traceIds) inLiveBatch.add(id);
      for (const seq of seqs) this.open1(`b:${key}`, seq);
    }
    for (const [id, { trace, seqs }] of traces) {
      if (doneIds.has(id)) continue;
      for (const seq of seqs) this.open1(`t:${id}`, seq);
      if (!inLiveBatch.has(id)) found.traces.push({ traceId: id, data: encoder.encode(JSON.stringify(trace)) });
    }
    // A v1 file becomes a batch record of ours, then goes: a kill in between leaves both, read as one batch.
    for (const [key, { batch, seqs, v1Files }] of batches) {
      if (v1Files.length === 0) continue;
      if (seqs.length === 0 && !doneKeys.has(key)) this.batch(batch);
      for (const file of v1Files) this.tryUnlink(file);
    }
    this.prune();
    return found;
  }

  private claimOrphans(): Claimed[] {
    const names = this.fs.readdirSync(this.directory);
    const owners = new Map<string, { ownerFile: boolean; files: { name: string; seq?: number; mtime: number }[] }>();
    const entry = (owner: string) => {
      const known = owners.get(owner);
      if (known) return known;
      const made = { ownerFile: false, files: [] as { name: string; seq?: number; mtime: number }[] };
      owners.set(owner, made);
      return made;
    };
    for (const name of names) {
      // A writer killed between a temporary file's write and its rename leaves it behind (a new segment's magic,
      // an owner file's pid): removed once its pid is gone, as the Python SDK does.
      const temporary = TEMPORARY.exec(name);
      if (temporary && !pidAlive(Number(temporary[1]))) this.tryUnlink(this.path(name));
      const owner = OWNER.exec(name);
      if (owner) entry(owner[1] as string).ownerFile = true;
      const segment = SEGMENT.exec(name);
      if (segment) entry(segment[1] as string).files.push({ name, seq: Number(segment[2]), mtime: this.mtimeOf(name) });
      const v1 = V1_BATCH.exec(name);
      if (v1) entry(v1[1] as string).files.push({ name, mtime: this.mtimeOf(name) });
    }
    // A dead owner with no file left (killed before its first segment): nothing to take over, only its owner file to remove.
    for (const [owner, { ownerFile, files }] of owners) {
      if (ownerFile && files.length === 0 && !ownersInThisProcess.has(owner) && this.isDead(owner)) this.tryUnlink(this.path(`${owner}.owner`));
    }
    const dead = [...owners]
      .filter(([owner, { ownerFile, files }]) => files.length > 0 && !ownersInThisProcess.has(owner) && (!ownerFile || this.isDead(owner)))
      .map(([owner, { ownerFile, files }]) => ({ owner, ownerFile, files, oldest: Math.min(...files.map((file) => file.mtime)) }))
      .sort((a, b) => a.oldest - b.oldest || a.owner.localeCompare(b.owner));
    const claimed: Claimed[] = [];
    for (const { owner, ownerFile, files } of dead) {
      // Removing the owner file is the claim on the owner: of two starts at once, only one succeeds.
      if (ownerFile && !this.tryUnlink(this.path(`${owner}.owner`))) continue;
      files.sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0) || a.mtime - b.mtime);
      for (const file of files) {
        const seq = file.seq === undefined ? undefined : ++this.seq;
        const target = seq === undefined ? `${this.owner}.${(V1_BATCH.exec(file.name) as RegExpExecArray)[2]}.batch` : segmentName(this.owner, seq);
        try {
          this.fs.renameSync(this.path(file.name), this.path(target));
        } catch {
          continue; // another start claimed it first
        }
        claimed.push({ original: file.name, file: this.path(target), seq });
      }
    }
    return claimed;
  }

  private readSegment(file: Claimed): { records: SpoolRecord[]; torn: boolean } | undefined {
    let content: Buffer;
    try {
      content = this.fs.readFileSync(file.file);
    } catch (error) {
      return this.quarantine(file, String(error));
    }
    if (content.length < SPOOL_MAGIC.length || content.toString('latin1', 0, SPOOL_MAGIC.length) !== SPOOL_MAGIC) {
      return this.quarantine(file, content.length === 0 ? 'empty' : `no ${SPOOL_MAGIC} header`);
    }
    const records: SpoolRecord[] = [];
    let at = SPOOL_MAGIC.length;
    while (at < content.length) {
      if (at + 8 > content.length) return { records, torn: true };
      const length = content.readUInt32BE(at);
      const crc = content.readUInt32BE(at + 4);
      const end = at + 8 + length;
      if (end > content.length) return { records, torn: true };
      const payload = content.subarray(at + 8, end);
      if (this.crc32(payload) !== crc) return { records, torn: true };
      const record = parseRecord(payload);
      if (record === undefined) return { records, torn: true };
      if (record !== null) records.push(record);
      at = end;
    }
    return { records, torn: false };
  }

  private readV1(file: Claimed): { records: SpoolRecord[]; torn: boolean } | undefined {
    try {
      const content = this.fs.readFileSync(file.file);
      const newline = content.indexOf(10);
      const header = JSON.parse(content.subarray(0, newline).toString('utf8')) as { key?: unknown; trace_ids?: unknown };
      if (newline < 0 || typeof header.key !== 'string' || !isStringArray(header.trace_ids)) return this.quarantine(file, 'no v1 header line');
      const body = content.subarray(newline + 1).toString('utf8');
      JSON.parse(body);
      return { records: [{ t: 'batch', key: header.key, ids: header.trace_ids, body }], torn: false };
    } catch (error) {
      return this.quarantine(file, String(error));
    }
  }

  /** Renames a file that cannot be read to `<its original name>.unreadable`, which no start claims. */
  private quarantine(file: Claimed, why: string): undefined {
    const target = this.path(`${file.original}.unreadable`);
    try {
      this.fs.renameSync(file.file, target);
    } catch {
      // gone already: nothing left to claim again
    }
    this.warn('spool:unreadable', `spool file ${file.original} is unreadable (${why}): renamed to ${target}, its traces are not recovered`);
    return undefined;
  }

  /** Appends a record whose payload is `parts` (text as UTF-8), made in one buffer without intermediate copies. */
  private append(parts: (string | Uint8Array)[], liveKey?: string): void {
    if (this.broken || this.closed) return;
    try {
      this.heartbeat();
      let length = 0;
      for (const part of parts) length += typeof part === 'string' ? Buffer.byteLength(part) : part.length;
      const record = Buffer.allocUnsafe(8 + length);
      let at = 8;
      for (const part of parts) {
        if (typeof part === 'string') at += record.write(part, at);
        else {
          record.set(part, at);
          at += part.length;
        }
      }
      record.writeUInt32BE(length, 0);
      record.writeUInt32BE(this.crc32(record.subarray(8)), 4);
      if (this.current === undefined || (this.currentBytes + record.length > this.segmentBytes && this.currentBytes > SPOOL_MAGIC.length)) this.roll();
      const current = this.current as number;
      this.currentBytes += record.length;
      if (liveKey !== undefined) this.open1(liveKey, current);
      this.buffer.push(record);
      if (this.sync !== 'interval') this.flush();
      else this.schedule();
    } catch (error) {
      this.fail(error);
    }
  }

  /** Makes the records of the traces handed over since the last time (`interval` only). */
  private frame(): void {
    if (this.unframed.length === 0) return;
    const items = this.unframed;
    this.unframed = [];
    for (const item of items) this.appendTrace(item);
  }

  private schedule(): void {
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => this.flush(), this.intervalMs);
    this.timer.unref?.();
  }

  /** Starts the next segment (the previous one's records written first). */
  private roll(): void {
    this.writeBuffer();
    this.closeSegment();
    const seq = ++this.seq;
    const file = this.path(segmentName(this.owner, seq));
    // Created whole under a temporary name: a kill can never leave a segment without its magic.
    this.writeAtomically(file, SPOOL_MAGIC);
    this.fd = this.fs.openSync(file, 'a');
    if (this.sync === 'fsync') this.fsyncDirectory();
    this.current = seq;
    this.currentBytes = SPOOL_MAGIC.length;
    this.live.set(seq, 0);
  }

  private open1(liveKey: string, seq: number): void {
    this.live.set(seq, (this.live.get(seq) ?? 0) + 1);
    const seqs = this.where.get(liveKey);
    if (seqs) seqs.push(seq);
    else this.where.set(liveKey, [seq]);
  }

  private close1(liveKey: string): void {
    const seqs = this.where.get(liveKey);
    if (!seqs) return;
    this.where.delete(liveKey);
    for (const seq of seqs) {
      const count = this.live.get(seq);
      if (count !== undefined) this.live.set(seq, count - 1);
    }
  }

  /** Deletes the oldest segments while every record in them is done (with nothing live at all, the current one too). */
  private prune(): void {
    for (const [seq, count] of this.live) {
      if (count > 0) break;
      if (seq === this.current) {
        this.buffer = [];
        clearTimeout(this.timer);
        this.timer = undefined;
        this.closeSegment();
      }
      this.tryUnlink(this.path(segmentName(this.owner, seq)));
      this.live.delete(seq);
    }
  }

  private closeSegment(): void {
    if (this.fd !== undefined) {
      try {
        this.fs.closeSync(this.fd);
      } catch {
        // closed already
      }
    }
    this.fd = undefined;
    this.current = undefined;
  }

  /** A spool that cannot be written is turned off (delivery goes on from memory), with a warning. */
  private fail(error: unknown): void {
    this.broken = true;
    this.buffer = [];
    this.unframed = [];
    this.warn('spool:write', `could not write the spool in ${this.directory} (${String(error)}): the spool is off for this client, traces are delivered from memory only`);
  }

  private fsyncDirectory(): void {
    const fd = this.fs.openSync(this.directory, 'r');
    try {
      this.fs.fsyncSync(fd);
    } finally {
      this.fs.closeSync(fd);
    }
  }

  private isDead(owner: string): boolean {
    const file = this.path(`${owner}.owner`);
    try {
      const pid = Number(this.fs.readFileSync(file, 'utf8'));
      const age = Date.now() - this.fs.statSync(file).mtimeMs;
      return pid === process.pid || age > STALE_AFTER_MS || !pidAlive(pid);
    } catch {
      return false;
    }
  }

  private mtimeOf(name: string): number {
    try {
      return this.fs.statSync(this.path(name)).mtimeMs;
    } catch {
      return 0;
    }
  }

  private tryUnlink(file: string): boolean {
    try {
      this.fs.unlinkSync(file);
      return true;
    } catch {
      return false; // another process removed it
    }
  }

  private writeAtomically(file: string, data: string): void {
    const slash = file.lastIndexOf('/');
    const temporary = `${file.slice(0, slash)}/.${file.slice(slash + 1)}.${process.pid}.tmp`;
    this.fs.writeFileSync(temporary, data);
    this.fs.renameSync(temporary, file);
  }

  private path(name: string): string {
    return `${this.directory}/${name}`;
  }
}

function segmentName(owner: string, seq: number): string {
  return `${owner}.${String(seq).padStart(8, '0')}.seg`;
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

/** A record, null for a kind this version does not know (skipped), undefined for bytes that are not a record. */
function parseRecord(payload: Uint8Array): SpoolRecord | null | undefined {
  let record: unknown;
  try {
    record = JSON.parse(decoder.decode(payload));
  } catch {
    return undefined;
  }
  if (!isRecord(record)) return undefined;
  if (record.t === 'trace') return typeof record.id === 'string' && isRecord(record.trace) ? (record as SpoolRecord) : undefined;
  if (record.t === 'batch') return typeof record.key === 'string' && isStringArray(record.ids) && typeof record.body === 'string' ? (record as SpoolRecord) : undefined;
  if (record.t === 'done') return (record.key === null || typeof record.key === 'string') && isStringArray(record.ids) ? (record as SpoolRecord) : undefined;
  return null;
}

function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
