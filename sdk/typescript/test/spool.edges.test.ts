// Edges of the spool's files that spool.files.test.ts leaves: a closed spool, a v1 batch through two crashes,
// a start that loses a race for a segment, a v1 file's quarantine warning.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { it } from 'node:test';
import { tableCrc32 } from '../src/crc32.js';
import { Batch } from '../src/delivery.js';
import { SPOOL_MAGIC, Spool, type SpoolOptions } from '../src/spool.js';

const spoolDirectory = () => fs.mkdtempSync(path.join(tmpdir(), 'ti-spool-edges-'));
const spool = (directory: string, options: Partial<SpoolOptions> = {}) => new Spool(directory, { fs, crc32: tableCrc32, ...options });
const item = (id: string) => ({ traceId: id, data: new TextEncoder().encode(`{"trace_id":"${id}"}`) });

/** Makes a live spool's files look like a dead process's: another owner name, no owner file. */
function abandon(directory: string, owner: string, as: string): void {
  for (const name of fs.readdirSync(directory)) {
    if (name === `${owner}.owner`) fs.unlinkSync(path.join(directory, name));
    else if (name.startsWith(`${owner}.`)) fs.renameSync(path.join(directory, name), path.join(directory, `${as}${name.slice(owner.length)}`));
  }
}

it('once closed, a spool leaves its files as they are for the next start: a late trace, batch or answer writes and deletes nothing', () => {
  const directory = spoolDirectory();
  const s = spool(directory, { sync: 'write', segmentBytes: 10 });
  s.trace(item('t1'));
  s.trace(item('t2'));
  s.close();
  const files = () => fs.readdirSync(directory).sort().map((name) => `${name}: ${fs.readFileSync(path.join(directory, name)).toString('base64')}`);
  const left = files();
  assert.equal(left.length, 3); // a segment for each live trace, and the owner file
  s.trace(item('t3'));
  s.batch(Batch.of([item('t3')], 'late'));
  s.done(null, ['t1', 't2'], true);
  s.flush();
  assert.deepEqual(files(), left);
});

it('a v1 batch, once made a record of a spool that then dies too, is got back by the start after', () => {
  const directory = spoolDirectory();
  fs.writeFileSync(path.join(directory, 'old.k1.batch'), `${JSON.stringify({ key: 'k1', trace_ids: ['a1'] })}\n{"traces":[{"trace_id":"a1"}]}`);
  const first = spool(directory, { sync: 'write' });
  assert.deepEqual(first.recover().batches.map((batch) => batch.key), ['k1']);
  abandon(directory, first.owner, 'dead1');
  const second = spool(directory, { sync: 'write' }); // its record holds no trace record beside it
  assert.deepEqual(second.recover().batches.map((batch) => batch.key), ['k1']);
  abandon(directory, second.owner, 'dead2');
  assert.deepEqual(spool(directory).recover().batches.map((batch) => batch.key), ['k1']);
});

it('a segment another start renamed first is neither read nor counted unreadable', () => {
  const directory = spoolDirectory();
  for (const [seq, id] of [[1, 't1'], [2, 't2']] as const) {
    const payload = Buffer.from(JSON.stringify({ t: 'trace', id, trace: { trace_id: id } }));
    const header = Buffer.alloc(8);
    header.writeUInt32BE(payload.length, 0);
    header.writeUInt32BE(tableCrc32(payload), 4);
    fs.writeFileSync(path.join(directory, `gone.0000000${seq}.seg`), Buffer.concat([Buffer.from(SPOOL_MAGIC), header, payload]));
  }
  const racing = {
    ...fs,
    renameSync: (from: fs.PathLike, to: fs.PathLike) => {
      if (String(from).endsWith('gone.00000001.seg')) {
        fs.renameSync(from, path.join(directory, 'taken-by-another-start'));
        throw Object.assign(new Error('ENOENT: no such file or directory'), { code: 'ENOENT' });
      }
      fs.renameSync(from, to);
    },
  } as typeof fs;
  const warnings: string[] = [];
  const found = spool(directory, { fs: racing, warn: (cause) => warnings.push(cause) }).recover();
  assert.deepEqual([found.traces.map((trace) => trace.traceId), found.unreadableFiles, found.tornRecords, warnings], [['t2'], 0, 0, []]);
});

it('says why a v1 file is quarantined', () => {
  const directory = spoolDirectory();
  fs.writeFileSync(path.join(directory, 'old.k1.batch'), `${JSON.stringify({ key: 1, trace_ids: ['a1'] })}\n{"traces":[]}`);
  const warnings: string[] = [];
  const found = spool(directory, { warn: (cause, message) => warnings.push(`${cause}: ${message}`) }).recover();
  assert.equal(found.unreadableFiles, 1);
  assert.deepEqual(warnings.map((warning) => warning.replace(/: renamed to .*/, '')), ['spool:unreadable: spool file old.k1.batch is unreadable (no v1 header line)']);
});
