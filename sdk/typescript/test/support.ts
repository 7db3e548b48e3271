import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { tableCrc32 } from '../src/crc32.js';
import type { Answer, Transport } from '../src/index.js';
import { SPOOL_MAGIC } from '../src/spool.js';

export const CONFORMANCE = process.env.TRACE_INGEST_CONFORMANCE_DIR ?? new URL('../../../conformance/', import.meta.url).pathname;

export function conformance<T>(name: string): T {
  return JSON.parse(readFileSync(`${CONFORMANCE}/${name}`, 'utf8')) as T;
}

/** The payloads of a spool segment file, read by the format (not by the Spool): every record whole, its CRC right. */
export function payloads(file: string): string[] {
  const content = readFileSync(file);
  assert.equal(content.toString('latin1', 0, 8), SPOOL_MAGIC);
  const found: string[] = [];
  for (let at = 8; at < content.length; ) {
    const length = content.readUInt32BE(at);
    const payload = content.subarray(at + 8, at + 8 + length);
    assert.equal(payload.length, length, `record at ${at} cut short`);
    assert.equal(tableCrc32(payload), content.readUInt32BE(at + 4), `record at ${at}: CRC`);
    found.push(payload.toString('utf8'));
    at += 8 + length;
  }
  return found;
}

export interface Recorded {
  headers: Record<string, string>;
  body: { traces: Record<string, unknown>[] };
  raw: Uint8Array;
}

/** A transport that records every request and answers from a script, then with `answer` (200 for all by default). */
export class Recorder implements Transport {
  readonly requests: Recorded[] = [];

  constructor(
    private readonly answers: Answer[] = [],
    private readonly answer?: (traces: Record<string, unknown>[]) => Answer | Promise<Answer>,
  ) {}

  async post(body: Uint8Array, headers: Record<string, string>): Promise<Answer> {
    const decoded = JSON.parse(gunzipSync(body).toString('utf8')) as Recorded['body'];
    const lower = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
    this.requests.push({ headers: lower, body: decoded, raw: body });
    const scripted = this.answers.shift();
    if (scripted) return scripted;
    if (this.answer) return this.answer(decoded.traces);
    return ok(decoded.traces.length);
  }

  get traceIds(): string[] {
    return this.requests.flatMap((request) => request.body.traces.map((trace) => trace.trace_id as string));
  }
}

export function ok(count: number, errors: unknown[] = []): Answer {
  return { status: 200, headers: {}, body: { accepted: count - errors.length, rejected: errors.length, errors } };
}

const INDEX = new URL('../src/index.js', import.meta.url).href;

/** Node arguments that run `code` as an ES module with `TraceIngest` imported from the SDK under test. */
export function program(code: string): string[] {
  return ['--input-type=module', '-e', `import { TraceIngest } from ${JSON.stringify(INDEX)};\n${code}`];
}

/** The child's exit code, or the signal that ended it. */
export function exitOf(child: ChildProcess): Promise<number | NodeJS.Signals> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.signalCode ?? (child.exitCode as number));
    else child.on('exit', (code, signal) => resolve(signal ?? (code as number)));
  });
}

/** Runs `code` (see {@link program}) to its end: its exit code (or signal) and what it wrote to stderr. */
export async function runProgram(code: string, env: Record<string, string> = {}): Promise<{ exit: number | NodeJS.Signals; stderr: string }> {
  const child = spawn(process.execPath, program(code), { stdio: ['ignore', 'inherit', 'pipe'], env: { ...process.env, ...env } });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exit = await exitOf(child);
  await new Promise((resolve) => (child.stderr?.readableEnded ? resolve(undefined) : child.stderr?.on('end', resolve)));
  return { exit, stderr };
}

/** The SDK's lines among `stderr`. */
export function sdkLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.startsWith('[trace-ingest] '));
}
