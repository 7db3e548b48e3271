import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Batch } from './delivery.js';

const HEARTBEAT_MS = 10_000;
/** An owner that has not touched its file for this long is taken for dead even if its pid lives (pids are reused). */
const STALE_AFTER_MS = 60_000;
/** Spool owners alive in this process: an owner file with our pid but not in here was left by an earlier process. */
const ownersInThisProcess = new Set<string>();

/**
 * The opt-in durable spool (Node only): each batch is written before it is sent and deleted after
 * a final answer, so a batch of a process killed with `kill -9` is resent, with its original key,
 * by the next process started on the same directory. Files: `<owner>.<key>.batch` (a JSON header
 * line, then the body) and `<owner>.owner` (the owner's pid); the Python SDK writes the same.
 */
export class Spool {
  readonly owner = crypto.randomUUID().replaceAll('-', '');
  private lastBeat = 0;

  constructor(readonly directory: string) {
    mkdirSync(directory, { recursive: true });
    ownersInThisProcess.add(this.owner);
    this.heartbeat();
  }

  heartbeat(): void {
    const now = Date.now();
    if (this.lastBeat && now - this.lastBeat < HEARTBEAT_MS) return;
    this.lastBeat = now;
    writeAtomically(path.join(this.directory, `${this.owner}.owner`), Buffer.from(String(process.pid)));
  }

  write(batch: Batch): void {
    // Every write and delete keeps the owner file fresh (at most once per HEARTBEAT_MS): a process busy
    // sending never reaches the idle waits that beat too, and after STALE_AFTER_MS another process
    // would take its batches in flight for orphans and send them again.
    this.heartbeat();
    const header = Buffer.from(`${JSON.stringify({ key: batch.key, trace_ids: batch.traceIds })}\n`);
    writeAtomically(this.file(batch.key), Buffer.concat([header, batch.body]));
  }

  delete(key: string): void {
    this.heartbeat();
    try {
      unlinkSync(this.file(key));
    } catch {
      // already gone
    }
  }

  /** Gives up ownership once nothing of ours is left. */
  close(): void {
    if (readdirSync(this.directory).some((name) => name.startsWith(`${this.owner}.`) && name.endsWith('.batch'))) return;
    tryUnlink(path.join(this.directory, `${this.owner}.owner`));
    ownersInThisProcess.delete(this.owner);
  }

  /** Batches of owners that are gone, now ours (one atomic rename each), oldest first. */
  claimOrphans(): Batch[] {
    const names = readdirSync(this.directory);
    const ownerFiles = new Set(names.filter((name) => name.endsWith('.owner')).map((name) => name.split('.')[0] as string));
    const dead = new Set<string>();
    for (const owner of ownerFiles) if (this.isDead(owner)) dead.add(owner);
    const batches = names.filter((name) => name.endsWith('.batch'));
    for (const name of batches) {
      const owner = name.split('.')[0] as string;
      if (!ownerFiles.has(owner) && !ownersInThisProcess.has(owner)) dead.add(owner);
    }
    const claimed: Batch[] = [];
    const ordered = batches
      .filter((name) => dead.has(name.split('.')[0] as string))
      .map((name) => ({ name, mtime: mtimeOf(path.join(this.directory, name)) }))
      .sort((a, b) => a.mtime - b.mtime);
    for (const { name } of ordered) {
      const key = name.split('.')[1] as string;
      const target = this.file(key);
      try {
        renameSync(path.join(this.directory, name), target);
      } catch {
        continue; // another process claimed it first
      }
      const content = readFileSync(target);
      const newline = content.indexOf(10);
      const header = JSON.parse(content.subarray(0, newline).toString('utf8')) as { key: string; trace_ids: string[] };
      claimed.push(new Batch(header.key, header.trace_ids, new Uint8Array(content.subarray(newline + 1))));
    }
    for (const owner of dead) tryUnlink(path.join(this.directory, `${owner}.owner`));
    return claimed;
  }

  private isDead(owner: string): boolean {
    if (ownersInThisProcess.has(owner)) return false;
    const file = path.join(this.directory, `${owner}.owner`);
    try {
      const pid = Number(readFileSync(file, 'utf8'));
      const age = Date.now() - statSync(file).mtimeMs;
      return pid === process.pid || age > STALE_AFTER_MS || !pidAlive(pid);
    } catch {
      return false;
    }
  }

  private file(key: string): string {
    return path.join(this.directory, `${this.owner}.${key}.batch`);
  }
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

function mtimeOf(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

function tryUnlink(file: string): void {
  try {
    if (existsSync(file)) unlinkSync(file);
  } catch {
    // another process removed it
  }
}

function writeAtomically(file: string, data: Uint8Array): void {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  writeFileSync(temporary, data);
  renameSync(temporary, file);
}
