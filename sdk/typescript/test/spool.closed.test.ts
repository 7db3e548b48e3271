import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { it } from 'node:test';
import { tableCrc32 } from '../src/crc32.js';
import { Batch } from '../src/delivery.js';
import { Spool } from '../src/spool.js';

it('once closed, a spool leaves its files as they are for the next start: a late trace, batch or answer writes and deletes nothing', () => {
  const directory = fs.mkdtempSync(path.join(tmpdir(), 'ti-spool-closed-'));
  const spool = new Spool(directory, { fs, crc32: tableCrc32, sync: 'write', segmentBytes: 10 });
  const item = (id: string) => ({ traceId: id, data: new TextEncoder().encode(`{"trace_id":"${id}"}`) });
  spool.trace(item('t1'));
  spool.trace(item('t2'));
  spool.close();
  const files = () => fs.readdirSync(directory).sort().map((name) => `${name}: ${fs.readFileSync(path.join(directory, name)).toString('base64')}`);
  const left = files();
  assert.equal(left.length, 3); // a segment for each live trace, and the owner file
  spool.trace(item('t3'));
  spool.batch(Batch.of([item('t3')], 'late'));
  spool.done(null, ['t1', 't2'], true);
  spool.flush();
  assert.deepEqual(files(), left);
});
