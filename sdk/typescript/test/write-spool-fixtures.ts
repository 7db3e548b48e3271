// Writes sdk/conformance/spool-fixtures/typescript/: spool directories as this SDK leaves them after a crash,
// each with the expected.json that every SDK's fixture test checks (the Python SDK reads them too).
// Run after a build: node sdk/typescript/build/test/write-spool-fixtures.js
import * as fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tableCrc32 } from '../src/crc32.js';
import { Batch, type QueuedTrace } from '../src/delivery.js';
import { Spool } from '../src/spool.js';

const OUT = fileURLToPath(new URL('../../../conformance/spool-fixtures/typescript/', import.meta.url));
const DEAD = 'feedfacefeedfacefeedfacefeedface';
const OLD = 'c0ffeec0ffeec0ffeec0ffeec0ffeec0';

function trace(n: string): QueuedTrace {
  const traceId = `00000000-0000-4000-9000-0000000000${n}`;
  const wire = { trace_id: traceId, timestamp: '2026-11-28T12:00:00.000000Z', environment: 'fixture', root_span_name: 'fixture', spans: [], attributes: '{"text":"\\ud800 lone"}' };
  return { traceId, data: new TextEncoder().encode(JSON.stringify(wire)) };
}

/** Renames every file of the spool's owner to the dead owner's name, and drops the owner file (as after kill -9 and a stale owner). */
function abandon(directory: string, owner: string): void {
  for (const name of fs.readdirSync(directory)) {
    if (name === `${owner}.owner`) fs.unlinkSync(path.join(directory, name));
    else if (name.startsWith(`${owner}.`)) fs.renameSync(path.join(directory, name), path.join(directory, `${DEAD}${name.slice(owner.length)}`));
  }
}

function mixed(directory: string): void {
  const spool = new Spool(directory, { fs, crc32: tableCrc32, sync: 'write' });
  const [t1, t2, t3, t4, t5] = ['01', '02', '03', '04', '05'].map(trace) as [QueuedTrace, QueuedTrace, QueuedTrace, QueuedTrace, QueuedTrace];
  for (const item of [t1, t2, t3]) spool.trace(item);
  spool.batch(Batch.of([t1, t2], 'ts-fixture-key-live'));
  spool.batch(Batch.of([t3], 'ts-fixture-key-done'));
  spool.done('ts-fixture-key-done', [t3.traceId]);
  spool.trace(t4);
  spool.trace(t5);
  const segment = path.join(directory, `${spool.owner}.00000001.seg`);
  // A torn tail: a record header that promises 100 bytes, then 10 of them (a kill mid-write).
  const torn = Buffer.alloc(18);
  torn.writeUInt32BE(100, 0);
  torn.write('{"t":"trac', 8);
  fs.appendFileSync(segment, torn);
  abandon(directory, spool.owner);
  // A v1 file of another dead owner, as the SDK before the v2 spool wrote it.
  const v1 = Batch.of(['a1', 'a2'].map(trace), 'ts-fixture-key-v1');
  const header = `${JSON.stringify({ key: v1.key, trace_ids: v1.traceIds })}\n`;
  fs.writeFileSync(path.join(directory, `${OLD}.${v1.key}.batch`), Buffer.concat([Buffer.from(header), v1.body]));
  expect(directory, {
    comment: 'Written by the TypeScript SDK: a dead owner\'s segment (a live batch of two traces, a batch done, two loose traces, a torn tail) and a v1 .batch file of another dead owner. Trace 01\'s attributes hold a lone surrogate as the JSON escape.',
    recovered: 6,
    trace_ids: [t1, t2, t4, t5].map((item) => item.traceId).concat(v1.traceIds),
    batches: { 'ts-fixture-key-live': [t1.traceId, t2.traceId], 'ts-fixture-key-v1': [...v1.traceIds] },
    unreadable_spool_files: 0,
    torn_spool_records: 1,
  });
}

function unreadable(directory: string): void {
  fs.writeFileSync(path.join(directory, `${DEAD}.00000001.seg`), '');
  fs.writeFileSync(path.join(directory, `${DEAD}.00000002.seg`), 'TISPOOL1 an older or foreign format');
  fs.writeFileSync(path.join(directory, `${OLD}.no-header.batch`), '{"traces":[]}');
  expect(directory, {
    comment: 'Written by the TypeScript SDK\'s fixture script: a zero-length segment, a segment without the TISPOOL2 magic, a v1 file without its header line: each quarantined, nothing recovered.',
    recovered: 0,
    trace_ids: [],
    batches: {},
    unreadable_spool_files: 3,
    torn_spool_records: 0,
  });
}

/** One record as the format says: payload length and CRC-32 (uint32 big-endian each), then the payload. */
function record(payload: string, crc = tableCrc32(Buffer.from(payload))): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt32BE(Buffer.byteLength(payload), 0);
  header.writeUInt32BE(crc, 4);
  return Buffer.concat([header, Buffer.from(payload)]);
}

function skippedAndTorn(directory: string): void {
  const [t1, t2, t3, t4, t5, t6, t7, t8] = ['11', '12', '13', '14', '15', '16', '17', '18'].map(trace) as QueuedTrace[] as [QueuedTrace, QueuedTrace, QueuedTrace, QueuedTrace, QueuedTrace, QueuedTrace, QueuedTrace, QueuedTrace];
  const traceRecord = (item: QueuedTrace) => `{"t":"trace","id":${JSON.stringify(item.traceId)},"trace":${new TextDecoder().decode(item.data)}}`;
  const write = (seq: number, ...records: Buffer[]) => fs.writeFileSync(path.join(directory, `${DEAD}.${String(seq).padStart(8, '0')}.seg`), Buffer.concat([Buffer.from('TISPOOL2'), ...records]));
  // A record of a kind a later version may write: skipped, the records after it read.
  write(1, record(traceRecord(t1)), record('{"t":"checkpoint","note":"a kind this version does not know"}'), record(traceRecord(t2)));
  // A record whose CRC fails: the readable part ends before it.
  write(2, record(traceRecord(t3)), record(traceRecord(t4), 0x12345678), record(traceRecord(t5)));
  // A payload that is JSON but not an object: the same.
  write(3, record(traceRecord(t6)), record('"trace"'), record(traceRecord(t7)));
  // A record header cut short (a kill mid-write).
  write(4, record(traceRecord(t8)), Buffer.from([0, 0, 0, 42, 1]));
  // Whole records (the CRC holds) of a known kind with a field of the wrong type: the same as a payload that is not
  // an object. Neither SDK writes one; what follows it is not trusted either.
  const [t9, t10, t11, t12, t13, t14] = ['19', '20', '21', '22', '23', '24'].map(trace) as [QueuedTrace, QueuedTrace, QueuedTrace, QueuedTrace, QueuedTrace, QueuedTrace];
  write(5, record(traceRecord(t9)), record('{"t":"batch","key":"k","ids":["x",7],"body":"{}"}'), record(traceRecord(t10)));
  write(6, record(traceRecord(t11)), record('{"t":"trace","id":7,"trace":{}}'), record(traceRecord(t12)));
  write(7, record(traceRecord(t13)), record('{"t":"done","key":"k","ids":"x"}'), record(traceRecord(t14)));
  expect(directory, {
    comment: 'Written by the TypeScript SDK\'s fixture script: one dead owner\'s seven segments. A record of an unknown kind is skipped and reading goes on; a record whose CRC fails, a payload that is not a JSON object, a header cut short, and a whole record of a known kind with a field of the wrong type each end their file\'s readable part (the records before are recovered, one torn record counted per file).',
    recovered: 8,
    trace_ids: [t1, t2, t3, t6, t8, t9, t11, t13].map((item) => item.traceId),
    batches: {},
    unreadable_spool_files: 0,
    torn_spool_records: 6,
  });
}

function expect(directory: string, expected: Record<string, unknown>): void {
  fs.writeFileSync(path.join(directory, 'expected.json'), `${JSON.stringify(expected, null, 2)}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const [name, write] of [['mixed', mixed], ['unreadable', unreadable], ['skipped-and-torn', skippedAndTorn]] as const) {
    const directory = path.join(OUT, name);
    fs.rmSync(directory, { recursive: true, force: true });
    fs.mkdirSync(directory, { recursive: true });
    write(directory);
  }
  console.log(`wrote ${OUT}`);
}
