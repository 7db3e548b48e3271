// The spool's files, tested on the Spool itself (no client, no child process, no wait): what reaches a segment
// and when for each spoolSync setting, where segments roll over, which owners' files a start takes, what it does
// with a damaged or foreign file. The client-level tests are in spool.test.ts.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { it, mock } from 'node:test';
import { tableCrc32 } from '../src/crc32.js';
import { Batch, type QueuedTrace } from '../src/delivery.js';
import { SEGMENT_BYTES, SPOOL_MAGIC, Spool, type SpoolOptions } from '../src/spool.js';
import { conformance, payloads } from './support.js';

/** Payloads in whole frames and what both SDKs make of them. */
const spoolRecords = conformance<Record<'torn' | 'read_past', { case: string; payload: string }[]>>('spool-records.json');

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function spoolDirectory(): string {
  return fs.mkdtempSync(path.join(tmpdir(), 'ti-spool-files-'));
}

function item(id: string, pad = ''): QueuedTrace {
  return { traceId: id, data: encoder.encode(`{"trace_id":"${id}","pad":"${pad}"}`) };
}

/** One record as the format says: payload length and CRC-32 (both uint32 big-endian), then the payload. */
function frame(payload: string, crc?: number): Buffer {
  const bytes = Buffer.from(payload);
  const header = Buffer.alloc(8);
  header.writeUInt32BE(bytes.length, 0);
  header.writeUInt32BE(crc ?? tableCrc32(bytes), 4);
  return Buffer.concat([header, bytes]);
}

function segment(...records: Buffer[]): Buffer {
  return Buffer.concat([Buffer.from(SPOOL_MAGIC), ...records]);
}

const traceRecord = (id: string) => JSON.stringify({ t: 'trace', id, trace: { trace_id: id } });

const segments = (directory: string) => fs.readdirSync(directory).filter((name) => name.endsWith('.seg')).sort();
const recordIds = (directory: string) => segments(directory).map((name) => payloads(path.join(directory, name)).map((payload) => (JSON.parse(payload) as { id?: string; key?: string; t: string }).id ?? `${(JSON.parse(payload) as { t: string }).t}:${(JSON.parse(payload) as { key: string }).key}`));

/** Makes a live spool's files look like a dead process's: another owner name, no owner file. */
function abandon(directory: string, owner: string, as = 'dead'): void {
  for (const name of fs.readdirSync(directory)) {
    if (name === `${owner}.owner`) fs.unlinkSync(path.join(directory, name));
    else if (name.startsWith(`${owner}.`)) fs.renameSync(path.join(directory, name), path.join(directory, `${as}${name.slice(owner.length)}`));
  }
}

/** The node:fs module with some calls watched or replaced, and a log of the writes and fsyncs made. */
function watchedFs(overrides: Partial<typeof fs> = {}): { fs: typeof fs; calls: string[]; openFds: Set<number> } {
  const calls: string[] = [];
  const names = new Map<number, string>();
  const openFds = new Set<number>();
  const watched = {
    ...fs,
    openSync: (file: fs.PathLike, flags?: fs.OpenMode) => {
      const fd = fs.openSync(file, flags as fs.OpenMode);
      names.set(fd, path.basename(String(file)).replace(/^[0-9a-f]{32}\./, '') || 'directory');
      if (String(file) === path.dirname(String(file)) || !String(file).includes('.')) names.set(fd, 'directory');
      openFds.add(fd);
      return fd;
    },
    closeSync: (fd: number) => {
      openFds.delete(fd);
      fs.closeSync(fd);
    },
    writeSync: (fd: number, data: Uint8Array, offset?: number, length?: number) => {
      calls.push(`write ${names.get(fd)}`);
      return fs.writeSync(fd, data, offset, length);
    },
    fsyncSync: (fd: number) => {
      calls.push(`fsync ${names.get(fd)}`);
      fs.fsyncSync(fd);
    },
    ...overrides,
  };
  return { fs: watched as unknown as typeof fs, calls, openFds };
}

function spool(directory: string, options: Partial<SpoolOptions> = {}): Spool {
  return new Spool(directory, { fs, crc32: tableCrc32, ...options });
}

/** Runs `body` with setTimeout, setInterval and Date under node:test's mock timers, at the real time. */
function withMockTimers<T>(body: () => T, now = Date.now()): T {
  mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now });
  try {
    return body();
  } finally {
    mock.timers.reset();
  }
}

// --- when records reach the file -------------------------------------------------------------------

it('with spoolSync "write", a trace is one checksummed record in its segment before trace() returns, with no fsync', () => {
  const directory = spoolDirectory();
  const watched = watchedFs();
  const s = spool(directory, { fs: watched.fs, sync: 'write' });
  s.trace(item('t1'));
  assert.deepEqual(fs.readdirSync(directory).sort(), [`${s.owner}.00000001.seg`, `${s.owner}.owner`]);
  assert.equal(fs.readFileSync(path.join(directory, `${s.owner}.owner`), 'utf8'), String(process.pid));
  assert.deepEqual(payloads(path.join(directory, `${s.owner}.00000001.seg`)), ['{"t":"trace","id":"t1","trace":{"trace_id":"t1","pad":""}}']);
  assert.deepEqual(watched.calls, ['write 00000001.seg']);
  s.close();
});

it('with spoolSync "fsync", each record is fsynced before the call returns, and the directory once for each new segment', () => {
  const directory = spoolDirectory();
  const watched = watchedFs();
  const record = frame(`{"t":"trace","id":"t1","trace":{"trace_id":"t1","pad":""}}`).length;
  const s = spool(directory, { fs: watched.fs, sync: 'fsync', segmentBytes: SPOOL_MAGIC.length + record });
  s.trace(item('t1'));
  assert.deepEqual(watched.calls, ['fsync directory', 'write 00000001.seg', 'fsync 00000001.seg']);
  s.trace(item('t2')); // the first segment is full
  s.batch(Batch.of([item('t1'), item('t2')], 'k'));
  assert.deepEqual(watched.calls.slice(3), ['fsync directory', 'write 00000002.seg', 'fsync 00000002.seg', 'fsync directory', 'write 00000003.seg', 'fsync 00000003.seg']);
  s.close();
});

it('with spoolSync "interval" (the default), the traces handed over reach the file in one write within spoolIntervalMs, with no further call', () => {
  const directory = spoolDirectory();
  const watched = watchedFs();
  withMockTimers(() => {
    const s = spool(directory, { fs: watched.fs });
    s.trace(item('t1'));
    s.trace(item('t2'));
    mock.timers.tick(99);
    assert.deepEqual(segments(directory), []);
    mock.timers.tick(1);
    assert.deepEqual(recordIds(directory), [['t1', 't2']]);
    assert.deepEqual(watched.calls, ['write 00000001.seg']);
    const slower = spool(spoolDirectory(), { intervalMs: 250 });
    slower.trace(item('t3'));
    mock.timers.tick(249);
    assert.deepEqual(segments(slower.directory), []);
    mock.timers.tick(1);
    assert.deepEqual(recordIds(slower.directory), [['t3']]);
    s.close();
    slower.close();
  });
});

it('with "interval", a batch is on disk with every trace before it when batch() returns; a done waits for the interval unless told now; flush() and close() write what waits', () => {
  const directory = spoolDirectory();
  withMockTimers(() => {
    const s = spool(directory);
    s.trace(item('t1'));
    s.trace(item('t2'));
    s.batch(Batch.of([item('t1')], 'k1'));
    assert.deepEqual(recordIds(directory), [['t1', 't2', 'batch:k1']]);
    s.done('k1', ['t1']);
    assert.deepEqual(recordIds(directory), [['t1', 't2', 'batch:k1']]);
    mock.timers.tick(100);
    assert.deepEqual(recordIds(directory), [['t1', 't2', 'batch:k1', 'done:k1']]);
    s.trace(item('t3'));
    s.done(null, ['t2'], true); // t3's record before the done, both at once
    assert.deepEqual(recordIds(directory), [['t1', 't2', 'batch:k1', 'done:k1', 't3', 'done:null']]);
    s.trace(item('t4'));
    s.flush();
    assert.deepEqual(recordIds(directory), [['t1', 't2', 'batch:k1', 'done:k1', 't3', 'done:null', 't4']]);
    s.trace(item('t5'));
    s.close(); // t3, t4, t5 are live: kept for the next start, with the owner file
    assert.deepEqual(recordIds(directory), [['t1', 't2', 'batch:k1', 'done:k1', 't3', 'done:null', 't4', 't5']]);
    assert.ok(fs.existsSync(path.join(directory, `${s.owner}.owner`)));
    s.trace(item('t6')); // closed: nothing more is written
    s.done(null, ['t3'], true);
    mock.timers.tick(20_000);
    assert.deepEqual(recordIds(directory), [['t1', 't2', 'batch:k1', 'done:k1', 't3', 'done:null', 't4', 't5']]);
  });
  const found = spool(directory).recover();
  assert.deepEqual(found.traces.map((trace) => trace.traceId), ['t3', 't4', 't5']);
});

it('with "interval", a trace answered before its record was written leaves no segment behind', () => {
  const directory = spoolDirectory();
  withMockTimers(() => {
    const s = spool(directory);
    s.trace(item('t1'));
    s.done(null, ['t1']);
    mock.timers.tick(100);
    assert.deepEqual(segments(directory), []);
    s.close();
  });
  assert.deepEqual(fs.readdirSync(directory), []);
});

it('writes every byte of every record when the disk takes them a few bytes at a time', () => {
  const directory = spoolDirectory();
  const watched = watchedFs({ writeSync: ((fd: number, data: Uint8Array, offset: number, length: number) => fs.writeSync(fd, data, offset, Math.min(length, 5))) as typeof fs.writeSync });
  withMockTimers(() => {
    const s = spool(directory, { fs: watched.fs });
    for (const id of ['t1', 't2', 't3']) s.trace(item(id, 'é✓'));
    s.batch(Batch.of([item('t1', 'é✓')], 'k'));
  });
  assert.deepEqual(recordIds(directory), [['t1', 't2', 't3', 'batch:k']]);
});

it('keeps a record and a batch body with any Unicode exactly, byte for byte', () => {
  const directory = spoolDirectory();
  const s = spool(directory, { sync: 'write' });
  const traced = { traceId: 'tü', data: encoder.encode('{"trace_id":"tü","name":"日本語 😀"}') };
  s.trace(traced);
  const batch = Batch.of([traced], 'clé-😀');
  s.batch(batch);
  abandon(directory, s.owner);
  const found = spool(directory).recover();
  assert.deepEqual(found.batches.map((b) => [b.key, b.traceIds, decoder.decode(b.body)]), [['clé-😀', ['tü'], decoder.decode(batch.body)]]);
});

// --- segments -------------------------------------------------------------------------------------------

it('rolls over where the next record would pass segmentBytes: a segment is filled exactly, and a record bigger than a segment has one to itself', () => {
  const record = frame(`{"t":"trace","id":"t0","trace":{"trace_id":"t0","pad":""}}`).length;
  const sizes = (segmentBytes: number) => {
    const directory = spoolDirectory();
    const s = spool(directory, { sync: 'write', segmentBytes });
    for (let i = 0; i < 5; i++) s.trace(item(`t${i}`));
    const found = segments(directory).map((name) => fs.statSync(path.join(directory, name)).size);
    assert.deepEqual(recordIds(directory).flat(), ['t0', 't1', 't2', 't3', 't4']);
    s.close();
    return found;
  };
  const magic = SPOOL_MAGIC.length;
  assert.deepEqual(sizes(magic + 2 * record), [magic + 2 * record, magic + 2 * record, magic + record]);
  assert.deepEqual(sizes(magic + 2 * record - 1), Array(5).fill(magic + record));
  assert.deepEqual(sizes(10), Array(5).fill(magic + record));
});

it('rolls over at 4 MiB by default', () => {
  const directory = spoolDirectory();
  const s = spool(directory, { sync: 'write' });
  const record = (SEGMENT_BYTES - SPOOL_MAGIC.length) / 4;
  const overhead = frame(`{"t":"trace","id":"t0","trace":{"trace_id":"t0","pad":""}}`).length;
  for (let i = 0; i < 5; i++) s.trace(item(`t${i}`, 'x'.repeat(record - overhead)));
  assert.equal(SEGMENT_BYTES, 4 * 1024 * 1024);
  assert.deepEqual(segments(directory).map((name) => fs.statSync(path.join(directory, name)).size), [SEGMENT_BYTES, SPOOL_MAGIC.length + record]);
  s.done(null, ['t0', 't1', 't2', 't3', 't4']);
  s.close();
  assert.deepEqual(fs.readdirSync(directory), []);
});

it('with "interval" and small segments, each record lands in the segment it was counted in', () => {
  const directory = spoolDirectory();
  const record = frame(`{"t":"trace","id":"t0","trace":{"trace_id":"t0","pad":""}}`).length;
  withMockTimers(() => {
    const s = spool(directory, { segmentBytes: SPOOL_MAGIC.length + 2 * record });
    for (let i = 0; i < 5; i++) s.trace(item(`t${i}`));
    mock.timers.tick(100);
    assert.deepEqual(recordIds(directory), [['t0', 't1'], ['t2', 't3'], ['t4']]);
    s.done(null, ['t0', 't1']);
    assert.deepEqual(recordIds(directory), [['t2', 't3'], ['t4']]);
    mock.timers.tick(100);
    assert.deepEqual(recordIds(directory), [['t2', 't3'], ['t4', 'done:null']]);
  });
});

it('an answer told twice never frees the segment of a trace still live', () => {
  const directory = spoolDirectory();
  const s = spool(directory, { sync: 'write' });
  s.trace(item('t1'));
  s.trace(item('t2'));
  s.done(null, ['t1']);
  s.done(null, ['t1']);
  assert.deepEqual(recordIds(directory), [['t1', 't2', 'done:null', 'done:null']]);
  abandon(directory, s.owner);
  assert.deepEqual(spool(directory).recover().traces.map((trace) => trace.traceId), ['t2']);
});

it('after every record is done and its segment deleted, the next trace goes to a new segment on disk', () => {
  const directory = spoolDirectory();
  const watched = watchedFs();
  const s = spool(directory, { fs: watched.fs, sync: 'write' });
  s.trace(item('t1'));
  s.done(null, ['t1']);
  assert.deepEqual(segments(directory), []);
  assert.equal(watched.openFds.size, 0);
  s.trace(item('t2'));
  assert.deepEqual(recordIds(directory), [['t2']]);
  s.close();
  assert.equal(watched.openFds.size, 0);
  abandon(directory, s.owner);
  assert.deepEqual(spool(directory).recover().traces.map((trace) => trace.traceId), ['t2']);
});

it('closes every file it opened: on roll-over and on close', () => {
  const directory = spoolDirectory();
  const watched = watchedFs();
  const s = spool(directory, { fs: watched.fs, sync: 'fsync', segmentBytes: 10 });
  for (const id of ['t1', 't2', 't3']) s.trace(item(id));
  assert.equal(watched.openFds.size, 1);
  s.close();
  assert.equal(watched.openFds.size, 0);
});

// --- the owner file -----------------------------------------------------------------------------------

it('keeps its owner file fresh every 10 s while idle or busy, not more often, and stops on close', () => {
  const directory = spoolDirectory();
  let beats = 0;
  const watched = watchedFs({
    renameSync: (from: fs.PathLike, to: fs.PathLike) => {
      if (String(to).endsWith('.owner')) beats++;
      fs.renameSync(from, to);
    },
  });
  const start = Date.now();
  withMockTimers(() => {
    const s = spool(directory, { fs: watched.fs, sync: 'write' });
    assert.equal(beats, 1);
    mock.timers.tick(9_999);
    s.trace(item('t1'));
    assert.equal(beats, 1);
    mock.timers.tick(1); // idle: the timer
    assert.equal(beats, 2);
    mock.timers.setTime(start + 19_999);
    s.trace(item('t2'));
    assert.equal(beats, 2);
    mock.timers.setTime(start + 20_000); // busy: the write itself, before the timer
    s.trace(item('t3'));
    assert.equal(beats, 3);
    s.done(null, ['t1', 't2', 't3']);
    s.close();
    mock.timers.tick(60_000);
    assert.equal(beats, 3);
  }, start);
  assert.deepEqual(fs.readdirSync(directory), []);
});

it('warns when it cannot refresh its owner file, and goes on writing', () => {
  const directory = spoolDirectory();
  let failing = false;
  const warnings: string[] = [];
  const watched = watchedFs({
    writeFileSync: ((file: fs.PathOrFileDescriptor, data: string) => {
      if (failing) throw Object.assign(new Error('EROFS: read-only file system'), { code: 'EROFS' });
      fs.writeFileSync(file, data);
    }) as typeof fs.writeFileSync,
  });
  withMockTimers(() => {
    const s = spool(directory, { fs: watched.fs, sync: 'write', warn: (cause, message) => warnings.push(`${cause}: ${message}`) });
    s.trace(item('t1'));
    failing = true;
    mock.timers.tick(10_000);
    s.trace(item('t2'));
    assert.deepEqual(recordIds(directory), [['t1', 't2']]);
  });
  assert.equal(warnings.length, 1);
  assert.match(warnings[0] as string, /^spool:heartbeat: could not refresh the spool's owner file in .*EROFS/);
});

it('holds no process open: its timers are unref-ed', () => {
  const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
  const before = timers();
  const s = spool(spoolDirectory());
  s.trace(item('t1')); // "interval": a timer waits to write it
  assert.equal(timers(), before);
  s.close();
});

// --- a disk that fails --------------------------------------------------------------------------------

it('turns itself off with one warning when the disk fails: no call throws, the owner file goes on close, and a next start gets what reached the disk', () => {
  for (const failing of ['writeSync', 'openSync'] as const) {
    const directory = spoolDirectory();
    let broken = false;
    const warnings: string[] = [];
    const watched = watchedFs({
      [failing]: (...args: unknown[]) => {
        if (broken) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
        return (fs[failing] as (...a: unknown[]) => unknown)(...args);
      },
    });
    const s = spool(directory, { fs: watched.fs, sync: 'write', segmentBytes: 200, warn: (cause, message) => warnings.push(`${cause}: ${message}`) });
    s.trace(item('t1'));
    assert.equal(s.usable, true, failing);
    broken = true;
    for (const id of ['t2', 't3', 't4']) s.trace(item(id, 'x'.repeat(100)));
    assert.equal(s.usable, false, failing); // the exit line must not say that the spool keeps them
    s.batch(Batch.of([item('t2')], 'k'));
    s.done('k', ['t2'], true);
    s.flush();
    s.close();
    assert.equal(warnings.length, 1, failing);
    assert.match(warnings[0] as string, /^spool:write: could not write the spool in .*ENOSPC.*the spool is off for this client/, failing);
    assert.ok(!fs.existsSync(path.join(directory, `${s.owner}.owner`)), failing);
    assert.deepEqual(spool(directory).recover().traces.map((trace) => trace.traceId), ['t1'], failing);
  }
});

// --- which files a start takes ------------------------------------------------------------------------

/** A dead owner's files: a segment holding `ids`, and an owner file holding `pid` (none when undefined). */
function orphan(directory: string, owner: string, ids: string[], pid?: string, seq = 1): void {
  fs.writeFileSync(path.join(directory, `${owner}.${String(seq).padStart(8, '0')}.seg`), segment(...ids.map((id) => frame(traceRecord(id)))));
  if (pid !== undefined) fs.writeFileSync(path.join(directory, `${owner}.owner`), pid);
}

const recoveredIds = (directory: string, options: Partial<SpoolOptions> = {}) => {
  const s = spool(directory, options);
  const ids = s.recover().traces.map((trace) => trace.traceId);
  return { spool: s, ids };
};

it('leaves alone the files of an owner whose process lives, and takes them once its owner file is more than 60 s old', () => {
  const directory = spoolDirectory();
  orphan(directory, 'other', ['t1'], String(process.ppid)); // the process that started these tests: alive
  fs.writeFileSync(path.join(directory, 'idle.owner'), String(process.ppid)); // alive, no segment yet
  // The clock is mocked (an hour ago) and other.owner's time set to it: no stall of the machine makes it stale.
  const seconds = Math.floor(Date.now() / 1000) - 3_600;
  fs.utimesSync(path.join(directory, 'other.owner'), seconds, seconds);
  const before = fs.readdirSync(directory).sort();
  assert.deepEqual(withMockTimers(() => recoveredIds(directory).ids, seconds * 1000 + 1_000), []);
  const ours = fs.readdirSync(directory).filter((name) => !name.startsWith('other.') && !name.startsWith('idle.'));
  assert.deepEqual(fs.readdirSync(directory).filter((name) => !ours.includes(name)).sort(), before);
  assert.deepEqual(withMockTimers(() => recoveredIds(directory).ids, seconds * 1000 + 60_000), []);
  assert.deepEqual(withMockTimers(() => recoveredIds(directory).ids, seconds * 1000 + 60_001), ['t1']);
  assert.ok(fs.existsSync(path.join(directory, 'idle.owner')));
  assert.ok(!fs.existsSync(path.join(directory, 'other.owner')));
});

it('takes the files of an owner whose pid is its own but no spool of this process (a pid reused), or no live process: 0, empty, not a number, none', () => {
  for (const pid of [String(process.pid), '0', '', 'not a pid', String(2 ** 31 - 1)]) {
    const directory = spoolDirectory();
    orphan(directory, 'gone', ['t1'], pid);
    fs.writeFileSync(path.join(directory, 'idle.owner'), pid); // no segment: only its owner file, removed
    const { spool: s, ids } = recoveredIds(directory);
    assert.deepEqual(ids, ['t1'], JSON.stringify(pid));
    assert.deepEqual(fs.readdirSync(directory).filter((name) => !name.startsWith(s.owner)), [], JSON.stringify(pid));
  }
});

it("leaves the files of an owner whose pid kill() answers EPERM for (another user's live process)", () => {
  const directory = spoolDirectory();
  orphan(directory, 'theirs', ['t1'], '4242');
  const kill = mock.method(process, 'kill', () => {
    throw Object.assign(new Error('kill EPERM'), { code: 'EPERM' });
  });
  const seconds = Math.floor(Date.now() / 1000) - 3_600;
  fs.utimesSync(path.join(directory, 'theirs.owner'), seconds, seconds);
  try {
    assert.deepEqual(withMockTimers(() => recoveredIds(directory).ids, seconds * 1000 + 1_000), []);
  } finally {
    kill.mock.restore();
  }
  assert.ok(fs.existsSync(path.join(directory, 'theirs.00000001.seg')));
});

it("leaves an owner whose owner file cannot be read", () => {
  const directory = spoolDirectory();
  orphan(directory, 'locked', ['t1'], '12345');
  const watched = watchedFs({
    readFileSync: ((file: fs.PathOrFileDescriptor, options?: unknown) => {
      if (String(file).endsWith('locked.owner')) throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
      return fs.readFileSync(file, options as undefined);
    }) as typeof fs.readFileSync,
  });
  assert.deepEqual(recoveredIds(directory, { fs: watched.fs }).ids, []);
  assert.ok(fs.existsSync(path.join(directory, 'locked.00000001.seg')));
});

it('a second spool of this process takes nothing of a first one still open, and what it left once it is closed', () => {
  const directory = spoolDirectory();
  const first = spool(directory, { sync: 'write' });
  const idle = spool(directory, { sync: 'write' }); // no segment yet: its owner file must stay
  first.trace(item('t1'));
  assert.deepEqual(recoveredIds(directory).ids, []);
  assert.ok(fs.existsSync(path.join(directory, `${idle.owner}.owner`)));
  assert.deepEqual(recordIds(directory), [['t1']]);
  first.close();
  assert.deepEqual(recoveredIds(directory).ids, ['t1']);
  idle.close();
});

it('of two starts at once only one takes an owner: a start that finds the owner file or a segment already taken leaves it', () => {
  const directory = spoolDirectory();
  orphan(directory, 'gone', ['t1'], '0');
  orphan(directory, 'gone', ['t2'], '0', 2);
  // The other start removes the owner file first.
  const lostOwner = watchedFs({
    unlinkSync: (file: fs.PathLike) => {
      if (String(file).endsWith('gone.owner')) {
        fs.unlinkSync(file);
        throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
      }
      fs.unlinkSync(file);
    },
  });
  fs.copyFileSync(path.join(directory, 'gone.owner'), path.join(directory, 'gone.owner.keep'));
  assert.deepEqual(recoveredIds(directory, { fs: lostOwner.fs }).ids, []);
  assert.ok(fs.existsSync(path.join(directory, 'gone.00000001.seg')) && fs.existsSync(path.join(directory, 'gone.00000002.seg')));
  fs.renameSync(path.join(directory, 'gone.owner.keep'), path.join(directory, 'gone.owner'));
  // The other start renames the first segment first.
  const lostSegment = watchedFs({
    renameSync: (from: fs.PathLike, to: fs.PathLike) => {
      if (String(from).endsWith('gone.00000001.seg')) {
        fs.renameSync(from, path.join(directory, 'elsewhere.seg.taken'));
        throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
      }
      fs.renameSync(from, to);
    },
  });
  assert.deepEqual(recoveredIds(directory, { fs: lostSegment.fs }).ids, ['t2']);
});

it("leaves foreign files alone: names not of the format, quarantined files, a live writer's temporary files", () => {
  const directory = spoolDirectory();
  const live = `.x.00000001.seg.${process.ppid}.tmp`; // the test runner's pid: alive while this runs
  const foreign = ['notes.txt', 'x.1.seg', 'x.123456789.seg', 'x.0000000a.seg', 'x.00000001.seg.bak', 'a.b.00000001.seg', 'x.00000001.seg.unreadable', 'x.k.batch.unreadable', 'a.b.k.batch', 'x.batch', live, `.x.owner.${process.pid}.tmp`, '.x.owner.tmp', 'gone.owner.old', 'a.gone.owner'];
  // Shaped like a gone writer's temporary file but for the leading dot, or with something after `.tmp`.
  foreign.push(`x.owner.${2 ** 31 - 1}.tmp`, `.x.owner.${2 ** 31 - 1}.tmp.bak`);
  for (const name of foreign) fs.writeFileSync(path.join(directory, name), segment(frame(traceRecord(`in ${name}`))));
  orphan(directory, 'gone', ['t1']);
  const { spool: s, ids } = recoveredIds(directory);
  assert.deepEqual(ids, ['t1']);
  assert.deepEqual(fs.readdirSync(directory).filter((name) => !name.startsWith(s.owner)).sort(), [...foreign].sort());
  for (const name of foreign) assert.deepEqual(fs.readFileSync(path.join(directory, name)), segment(frame(traceRecord(`in ${name}`))), name);
});

it('removes the temporary files of writers that are gone (a kill between write and rename), and only those', () => {
  const directory = spoolDirectory();
  const dead = [`.x.00000002.seg.${2 ** 31 - 1}.tmp`, `.x.owner.${2 ** 31 - 1}.tmp`];
  const kept = [`.x.00000003.seg.${process.ppid}.tmp`, `.x.owner.${process.pid}.tmp`];
  for (const name of [...dead, ...kept]) fs.writeFileSync(path.join(directory, name), SPOOL_MAGIC);
  const { spool: s } = recoveredIds(directory);
  assert.deepEqual(fs.readdirSync(directory).filter((name) => !name.startsWith(s.owner)).sort(), [...kept].sort());
});

it('claims dead owners oldest first by their oldest file, equal times by owner name, and the v1 files of one owner by time', () => {
  const directory = spoolDirectory();
  const at = (name: string, seconds: number) => fs.utimesSync(path.join(directory, name), seconds, seconds);
  orphan(directory, 'b', ['b1'], undefined, 1);
  orphan(directory, 'b', ['b2'], undefined, 2);
  at('b.00000001.seg', 1_000); // b's oldest file: older than all of a's
  at('b.00000002.seg', 5_000);
  orphan(directory, 'a', ['a1']);
  at('a.00000001.seg', 2_000);
  orphan(directory, 'd', ['d1']);
  orphan(directory, 'c', ['c1']);
  at('c.00000001.seg', 3_000);
  at('d.00000001.seg', 3_000);
  const v1 = (key: string, seconds: number) => {
    fs.writeFileSync(path.join(directory, `e.${key}.batch`), `${JSON.stringify({ key, trace_ids: [key] })}\n{"traces":[{"trace_id":"${key}"}]}`);
    at(`e.${key}.batch`, seconds);
  };
  v1('k-new', 4_500);
  v1('k-old', 4_000);
  const found = spool(directory).recover();
  assert.deepEqual(found.traces.map((trace) => trace.traceId), ['b1', 'b2', 'a1', 'c1', 'd1']);
  assert.deepEqual(found.batches.map((batch) => batch.key), ['k-old', 'k-new']);
});

it('numbers its own segments after those it claimed, so that a second crash gets both back, in order', () => {
  const directory = spoolDirectory();
  orphan(directory, 'gone', ['t1'], undefined, 1);
  orphan(directory, 'gone', ['t2'], undefined, 2);
  orphan(directory, 'gone', ['t3'], undefined, 3);
  const s = spool(directory, { sync: 'write' });
  assert.deepEqual(s.recover().traces.map((trace) => trace.traceId), ['t1', 't2', 't3']);
  s.trace(item('t4'));
  assert.deepEqual(recordIds(directory), [['t1'], ['t2'], ['t3'], ['t4']]);
  abandon(directory, s.owner);
  assert.deepEqual(spool(directory).recover().traces.map((trace) => trace.traceId), ['t1', 't2', 't3', 't4']);
});

// --- what a start gets back, and what it deletes --------------------------------------------------------

it('deletes at start a dead segment whose records are all done, and a claimed one once what it held is answered', () => {
  const directory = spoolDirectory();
  const written = spool(directory, { sync: 'write', segmentBytes: 200 });
  written.trace(item('t1'));
  written.trace(item('t2', 'x'.repeat(100))); // a second segment
  written.batch(Batch.of([item('t2')], 'k'));
  written.done(null, ['t1']); // in a later segment; the first one goes
  abandon(directory, written.owner);
  fs.writeFileSync(path.join(directory, 'dead.00000001.seg'), segment(frame(traceRecord('t1')))); // as if the kill came before it went
  const s = spool(directory, { sync: 'write' });
  const found = s.recover();
  assert.deepEqual([found.traces.map((trace) => trace.traceId), found.batches.map((batch) => batch.key)], [[], ['k']]);
  assert.ok(!recordIds(directory).flat().includes('t1'), JSON.stringify(recordIds(directory)));
  s.done('k', ['t2']);
  assert.deepEqual(segments(directory), []);
  s.close();
  assert.deepEqual(fs.readdirSync(directory), []);
});

it('a live batch got back is still got back after a second crash', () => {
  const directory = spoolDirectory();
  const first = spool(directory, { sync: 'write' });
  first.trace(item('t1'));
  first.batch(Batch.of([item('t1')], 'k'));
  abandon(directory, first.owner);
  const second = spool(directory, { sync: 'write' });
  assert.deepEqual(second.recover().batches.map((batch) => batch.key), ['k']);
  second.trace(item('t2'));
  second.done(null, ['t2']); // its segment goes; the claimed one holds the live batch
  abandon(directory, second.owner, 'dead2');
  assert.deepEqual(spool(directory).recover().batches.map((batch) => batch.key), ['k']);
});

it('turns a v1 file into a batch record of its own before deleting it, so a second crash still gets it back, once', () => {
  const directory = spoolDirectory();
  const body = '{"traces":[{"trace_id":"a1"}]}';
  fs.writeFileSync(path.join(directory, 'old.k1.batch'), `${JSON.stringify({ key: 'k1', trace_ids: ['a1'] })}\n${body}`);
  const first = spool(directory, { sync: 'write' });
  assert.deepEqual(first.recover().batches.map((batch) => [batch.key, decoder.decode(batch.body)]), [['k1', body]]);
  assert.deepEqual(recordIds(directory), [['batch:k1']]);
  assert.deepEqual(fs.readdirSync(directory).filter((name) => name.endsWith('.batch')), []);
  abandon(directory, first.owner);
  // Killed between the record and the v1 file's removal: both there, one batch, written once.
  fs.writeFileSync(path.join(directory, 'old.k1.batch'), `${JSON.stringify({ key: 'k1', trace_ids: ['a1'] })}\n${body}`);
  const second = spool(directory, { sync: 'write' });
  assert.deepEqual(second.recover().batches.map((batch) => batch.key), ['k1']);
  assert.deepEqual(recordIds(directory), [['batch:k1']]);
});

it('a split whose second part was never written: the first part and the loose trace are got back, not the whole', () => {
  const directory = spoolDirectory();
  const s = spool(directory, { sync: 'write' });
  const [t1, t2] = [item('t1'), item('t2')];
  s.trace(t1);
  s.trace(t2);
  s.batch(Batch.of([t1, t2], 'whole'));
  s.batch(Batch.of([t1], 'left')); // killed before the right part's record
  abandon(directory, s.owner);
  const found = spool(directory).recover();
  assert.deepEqual([found.batches.map((batch) => batch.key), found.traces.map((trace) => trace.traceId)], [['left'], ['t2']]);
});

// --- damaged files -----------------------------------------------------------------------------------------

it('reads a segment that holds only its magic as empty, not unreadable, and deletes it', () => {
  const directory = spoolDirectory();
  fs.writeFileSync(path.join(directory, 'gone.00000001.seg'), SPOOL_MAGIC);
  const s = spool(directory);
  const found = s.recover();
  assert.deepEqual([found.traces, found.tornRecords, found.unreadableFiles], [[], 0, 0]);
  assert.deepEqual(segments(directory), []);
});

it('quarantines a file it cannot read, with a warning that says why', () => {
  const directory = spoolDirectory();
  fs.writeFileSync(path.join(directory, 'gone.00000001.seg'), '');
  fs.writeFileSync(path.join(directory, 'gone.00000002.seg'), 'TISPOOL');
  fs.writeFileSync(path.join(directory, 'gone.00000003.seg'), 'TISPOOL1 and more');
  const warnings: string[] = [];
  const found = spool(directory, { warn: (cause, message) => warnings.push(`${cause}: ${message}`) }).recover();
  assert.equal(found.unreadableFiles, 3);
  assert.deepEqual(warnings.map((warning) => warning.replace(/ in \/.*| renamed to .*/, '')), [
    'spool:unreadable: spool file gone.00000001.seg is unreadable (empty):',
    'spool:unreadable: spool file gone.00000002.seg is unreadable (no TISPOOL2 header):',
    'spool:unreadable: spool file gone.00000003.seg is unreadable (no TISPOOL2 header):',
  ]);
  assert.deepEqual(fs.readdirSync(directory).filter((name) => name.startsWith('gone.')).sort(), ['gone.00000001.seg.unreadable', 'gone.00000002.seg.unreadable', 'gone.00000003.seg.unreadable']);
});

it('quarantines a v1 file without a header line, or whose body is not JSON', () => {
  const directory = spoolDirectory();
  fs.writeFileSync(path.join(directory, 'old.k1.batch'), '{"key":"k1","trace_ids":["a1"]} ');
  fs.writeFileSync(path.join(directory, 'old.k2.batch'), `${JSON.stringify({ key: 'k2', trace_ids: ['a2'] })}\n{"traces":[`);
  fs.writeFileSync(path.join(directory, 'old.k3.batch'), `${JSON.stringify({ key: 'k3', trace_ids: [3] })}\n{"traces":[]}`);
  const found = spool(directory).recover();
  assert.deepEqual([found.batches, found.unreadableFiles], [[], 3]);
});

it('ends the readable part of a segment at bytes that are not a whole record: the records before it are got back, and the file counts once as torn', () => {
  const directory = spoolDirectory();
  const good = frame(traceRecord('ok'));
  assert.ok(spoolRecords.torn.length > 0);
  const tails: Record<string, Buffer> = {
    'a header cut short': Buffer.from([0, 0, 0]),
    'a payload cut short': frame(traceRecord('cut')).subarray(0, 20),
    'a CRC that fails': frame(traceRecord('bad-crc'), 12345),
    // Whole frames whose payload is not a record both SDKs can use (sdk/conformance/spool-records.json).
    ...Object.fromEntries(spoolRecords.torn.map(({ case: name, payload }) => [name, frame(payload)])),
  };
  Object.values(tails).forEach((tail, index) => {
    const name = `gone.${String(index + 1).padStart(8, '0')}.seg`;
    fs.writeFileSync(path.join(directory, name), segment(good, tail, frame(traceRecord(`after-${index}`))));
  });
  const found = spool(directory).recover();
  assert.deepEqual([found.traces.map((trace) => trace.traceId), found.batches, found.tornRecords, found.unreadableFiles], [['ok'], [], Object.keys(tails).length, 0]);
});

it('skips a record of a kind it does not know, and reads on', () => {
  const directory = spoolDirectory();
  const unknown = spoolRecords.read_past.map(({ payload }) => frame(payload));
  assert.ok(unknown.length > 0);
  fs.writeFileSync(path.join(directory, 'gone.00000001.seg'), segment(frame(traceRecord('t1')), ...unknown, frame(traceRecord('t2'))));
  const found = spool(directory).recover();
  assert.deepEqual([found.traces.map((trace) => trace.traceId), found.tornRecords], [['t1', 't2'], 0]);
});
