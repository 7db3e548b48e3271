import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AcceptedSpan, AcceptedTrace, TraceContext } from '../lambda/shared/domain/trace.js';
import { spanBatches, traceBatches } from '../lambda/datasets/column-batches.js';
import { toLandableTrace } from '../lambda/landing/landable-trace.js';
import { COLUMN_TYPE_NAMES, type LandableTrace, SPANS, TRACES } from '../lambda/datasets/registry.js';
import { parquetCodec } from '../lambda/datasets/parquet/parquet-codec.js';
import { writeParquet } from '../lambda/datasets/parquet/parquet-writer.js';
import { seededRandom } from '../devkit/dynamo/virtual-clock.js';
import { inFreshProcess } from './fresh-process.js';
import type { BenchResult } from './types.js';


export interface SyntheticTrace {
  context: TraceContext;
  trace: AcceptedTrace;
}

const WORDS = ['search', 'the', 'weather', 'in', 'Zürich', 'summarise', 'document', 'résumé', 'tool', 'call', 'answer', '東京', 'retrieve', 'context', 'plan', 'step'];
const KINDS = ['llm', 'tool', 'chain', 'retriever', 'agent', 'custom'] as const;
const MODELS = ['gpt-4o', 'claude-sonnet', 'llama-3-70b', ''];

function uuid(next: () => number): string {
  const hex = (n: number) => Array.from({ length: n }, () => Math.floor(next() * 16).toString(16)).join('');
  return `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`;
}

function iso(micros: number): string {
  const ms = Math.floor(micros / 1000);
  return `${new Date(ms).toISOString().slice(0, 23)}${String(micros % 1000).padStart(3, '0')}Z`;
}

/**
 * Deterministic traces shaped like agent runs: JSON inputs and outputs of a few hundred bytes,
 * tags on some spans, a little non-ASCII text. Used by the landing benchmarks.
 */
export function syntheticTraces(traceCount: number, spansPerTrace: number, seed = 42, orgs = 1): SyntheticTrace[] {
  const next = seededRandom(seed);
  const text = (words: number) => Array.from({ length: words }, () => WORDS[Math.floor(next() * WORDS.length)]).join(' ');
  const start = Date.UTC(2026, 10, 22, 10) * 1000;
  return Array.from({ length: traceCount }, (_, t) => {
    const traceMicros = start + t * 1_234_567;
    const trace_id = uuid(next);
    const spans: AcceptedSpan[] = [];
    for (let s = 0; s < spansPerTrace; s++) {
      const kind = KINDS[Math.floor(next() * KINDS.length)]!;
      const input = Math.floor(next() * 400);
      spans.push({
        span_id: uuid(next),
        parent_span_id: s === 0 ? null : spans[Math.floor(next() * s)]!.span_id,
        timestamp: iso(traceMicros + s * 1_001),
        duration_ms: Math.round(next() * 5_000_000) / 1000,
        name: `${kind}-${s}`,
        kind,
        status: next() < 0.95 ? 'ok' : 'error',
        model: kind === 'llm' ? MODELS[Math.floor(next() * MODELS.length)]! : '',
        input_tokens: input,
        output_tokens: Math.floor(next() * 300),
        total_tokens: input + 300,
        input: JSON.stringify({ messages: [{ role: 'user', content: text(20 + Math.floor(next() * 40)) }] }),
        output: JSON.stringify({ content: text(20 + Math.floor(next() * 40)) }),
        attributes: next() < 0.3 ? JSON.stringify({ tags: ['prod', `team-${Math.floor(next() * 5)}`], retries: 0 }) : '{}',
        error_message: next() < 0.05 ? `failed: ${text(6)}` : null,
        session_id: `session-${t % 97}`,
        agent_id: `agent-${t % 7}`,
        agent_name: `Agent ${t % 7}`,
        user_id: `user-${t % 131}`,
      });
    }
    const trace: AcceptedTrace = {
      trace_id,
      timestamp: iso(traceMicros),
      environment: 'production',
      workspace_slug: 'default',
      duration_ms: spansPerTrace * 123.456,
      root_span_name: 'agent-run',
      status: 'ok',
      model: 'gpt-4o',
      input_tokens: 1000,
      output_tokens: 500,
      total_tokens: 1500,
      attributes: JSON.stringify({ tags: ['bench'] }),
      session_id: `session-${t % 97}`,
      agent_id: `agent-${t % 7}`,
      agent_name: `Agent ${t % 7}`,
      user_id: `user-${t % 131}`,
      spans,
    };
    const context: TraceContext = {
      org_id: `org-${t % orgs}`,
      workspace_slug: 'default',
      api_key_id: 'key-0001',
      request_id: `req-${Math.floor(t / 10)}`,
      received_at: iso(traceMicros + 500_000),
    };
    return { context, trace };
  });
}

/** Checks and prepares traces the way the consumer does before encoding. */
export function landable(traces: readonly SyntheticTrace[]): LandableTrace[] {
  return traces.map(({ context, trace }) => toLandableTrace(context, trace));
}

const SPAN_DDL = `CREATE TABLE spans (
  trace_id VARCHAR NOT NULL, span_index INTEGER NOT NULL, span_id VARCHAR NOT NULL, parent_span_id VARCHAR,
  "timestamp" TIMESTAMPTZ NOT NULL, duration_ms DOUBLE NOT NULL, name VARCHAR NOT NULL, kind VARCHAR NOT NULL,
  status VARCHAR NOT NULL, model VARCHAR NOT NULL, input_tokens BIGINT NOT NULL, output_tokens BIGINT NOT NULL,
  total_tokens BIGINT NOT NULL, input VARCHAR NOT NULL, output VARCHAR NOT NULL, attributes VARCHAR NOT NULL,
  tags VARCHAR[] NOT NULL, error_message VARCHAR, session_id VARCHAR NOT NULL, agent_id VARCHAR NOT NULL,
  agent_name VARCHAR NOT NULL, user_id VARCHAR NOT NULL, environment VARCHAR NOT NULL, workspace_slug VARCHAR NOT NULL,
  api_key_id VARCHAR NOT NULL, request_id VARCHAR NOT NULL, received_at TIMESTAMPTZ NOT NULL)`;

/**
 * DuckDB writing the same span rows: appended through its appender from the same prepared traces,
 * then `COPY … TO … (FORMAT parquet)`. Returns the file size. The appends are written out by hand (a
 * baseline kept as it was measured before; a column added to the registry is not in it).
 */
export async function duckdbWriteSpans(traces: readonly LandableTrace[], file: string, codec: 'snappy' | 'zstd'): Promise<number> {
  const { DuckDBInstance, DuckDBTimestampTZValue, LIST, VARCHAR, listValue } = await import('@duckdb/node-api');
  const instance = await DuckDBInstance.create(':memory:', { threads: '1' });
  const connection = await instance.connect();
  try {
    await connection.run(SPAN_DDL);
    const appender = await connection.createAppender('spans');
    const tagsType = LIST(VARCHAR);
    const text = (value: string | null) => (value === null ? appender.appendNull() : appender.appendVarchar(value));
    for (const t of traces) {
      const { trace, context } = t;
      trace.spans.forEach((span, index) => {
        appender.appendVarchar(trace.trace_id);
        appender.appendInteger(index);
        appender.appendVarchar(span.span_id);
        text(span.parent_span_id);
        appender.appendTimestampTZ(new DuckDBTimestampTZValue(t.spanTimestampMicros[index]!));
        appender.appendDouble(span.duration_ms);
        appender.appendVarchar(span.name);
        appender.appendVarchar(span.kind);
        appender.appendVarchar(span.status);
        appender.appendVarchar(span.model);
        appender.appendBigInt(BigInt(span.input_tokens));
        appender.appendBigInt(BigInt(span.output_tokens));
        appender.appendBigInt(BigInt(span.total_tokens));
        appender.appendVarchar(span.input);
        appender.appendVarchar(span.output);
        appender.appendVarchar(span.attributes);
        appender.appendList(listValue(t.spanTags[index]!), tagsType);
        text(span.error_message);
        appender.appendVarchar(span.session_id);
        appender.appendVarchar(span.agent_id);
        appender.appendVarchar(span.agent_name);
        appender.appendVarchar(span.user_id);
        appender.appendVarchar(trace.environment);
        appender.appendVarchar(context.workspace_slug);
        appender.appendVarchar(context.api_key_id);
        appender.appendVarchar(context.request_id);
        appender.appendTimestampTZ(new DuckDBTimestampTZValue(t.receivedAtMicros));
        appender.endRow();
      });
    }
    appender.closeSync();
    await connection.run(`COPY spans TO '${file}' (FORMAT parquet, COMPRESSION ${codec}, ROW_GROUP_SIZE 10000)`);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
  return statSync(file).size;
}

function writeSpanJsonLines(traces: readonly LandableTrace[], file: string): void {
  const lines: string[] = [];
  for (const batch of spanBatches(traces)) {
    for (let r = 0; r < batch.rows; r++) {
      const row: Record<string, unknown> = {};
      SPANS.columns.forEach((c, i) => {
        const value = (batch.columns[i] as ArrayLike<unknown>)[r];
        row[c.name] = typeof value === 'bigint' ? value.toString() : value;
      });
      lines.push(JSON.stringify(row));
    }
  }
  writeFileSync(file, lines.join('\n'));
}

/**
 * DuckDB's fastest path for the same rows: it parses them from JSON lines itself, then
 * `COPY … TO … (FORMAT parquet)`. `seconds` is DuckDB's part only; `serialiseSeconds` is the time to
 * write the JSON lines from the same decoded traces first, which DuckDB's path needs in a consumer.
 */
export async function duckdbJsonWriteSpans(
  traces: readonly LandableTrace[],
  outDir: string,
): Promise<{ bytes: number; seconds: number; serialiseSeconds: number; serialiseCpuSeconds: number }> {
  const source = path.join(outDir, 'spans.jsonl');
  const serialising = process.hrtime.bigint();
  const serialisingCpu = process.cpuUsage();
  writeSpanJsonLines(traces, source);
  const serialiseSeconds = Number(process.hrtime.bigint() - serialising) / 1e9;
  const serialiseCpuSeconds = cpuSecondsSince(serialisingCpu);
  const started = process.hrtime.bigint();
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const instance = await DuckDBInstance.create(':memory:', { threads: '1' });
  const connection = await instance.connect();
  const columns = SPANS.columns
    .map((c) => `'${c.name}': '${c.type === 'timestamp' ? 'BIGINT' : COLUMN_TYPE_NAMES[c.type].duckdb}'`)
    .join(', ');
  const select = SPANS.columns.map((c) => (c.type === 'timestamp' ? `make_timestamp(${c.name}) AS ${c.name}` : `"${c.name}"`)).join(', ');
  const file = path.join(outDir, 'duckdb-json.parquet');
  await connection.run(`COPY (SELECT ${select} FROM read_json('${source}', format='newline_delimited', columns={${columns}})) TO '${file}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 10000)`);
  connection.closeSync();
  instance.closeSync();
  return { bytes: statSync(file).size, seconds: Number(process.hrtime.bigint() - started) / 1e9, serialiseSeconds, serialiseCpuSeconds };
}

/** CPU seconds (user + system, every thread of this process) since `before`. */
function cpuSecondsSince(before: NodeJS.CpuUsage): number {
  const { user, system } = process.cpuUsage(before);
  return (user + system) / 1e6;
}

/** Peak RSS in MB of this process so far. */
export function peakRssMb(): number {
  return process.resourceUsage().maxRSS / 1024;
}

interface ChildMeasurement {
  seconds: number;
  /** CPU time of the same section, every thread of the process (for DuckDB's read_json path, without the serialisation). */
  cpuSeconds: number;
  /** DuckDB's read_json path only: the time to write its JSON lines, not in `seconds`. */
  serialiseSeconds?: number;
  /** DuckDB's read_json path only: the part of `seconds` spent in the shape check its input comes from. */
  checkSeconds?: number;
  bytes: number;
  rows: number;
  peakRssMb: number;
  baselineRssMb: number;
}

const TRACE_COUNT = 2_000;
const LANDING_ROUNDS = 5;
const SPANS_PER_TRACE = 50;

async function measureInThisProcess(which: string, outDir: string): Promise<ChildMeasurement> {
  const traces = syntheticTraces(TRACE_COUNT, SPANS_PER_TRACE);
  const baselineRssMb = peakRssMb();
  const cpuBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  let bytes: number;
  let rows: number;
  if (which === 'landing-spans') {
    const file = writeParquet(SPANS, spanBatches(landable(traces)));
    bytes = file.bytes.byteLength;
    rows = file.rows;
  } else if (which === 'landing-traces') {
    const file = writeParquet(TRACES, traceBatches(landable(traces)));
    bytes = file.bytes.byteLength;
    rows = file.rows;
  } else if (which === 'duckdb-json-zstd') {
    // The shape check that parses the timestamps and extracts the tags read_json is given is timed, as it is
    // for ours and for the appender; writing the JSON lines is not (reported apart as serialiseSeconds).
    const checked = landable(traces);
    const checkSeconds = Number(process.hrtime.bigint() - started) / 1e9;
    const result = await duckdbJsonWriteSpans(checked, outDir);
    return {
      ...result,
      checkSeconds,
      seconds: checkSeconds + result.seconds,
      cpuSeconds: cpuSecondsSince(cpuBefore) - result.serialiseCpuSeconds,
      rows: TRACE_COUNT * SPANS_PER_TRACE,
      peakRssMb: peakRssMb(),
      baselineRssMb,
    };
  } else if (which === 'duckdb-snappy' || which === 'duckdb-zstd') {
    bytes = await duckdbWriteSpans(landable(traces), path.join(outDir, `${which}.parquet`), which === 'duckdb-zstd' ? 'zstd' : 'snappy');
    rows = TRACE_COUNT * SPANS_PER_TRACE;
  } else {
    throw new Error(`unknown measurement ${which}`);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { seconds, cpuSeconds: cpuSecondsSince(cpuBefore), bytes, rows, peakRssMb: peakRssMb(), baselineRssMb };
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Runs one measurement in a fresh Node process so that its peak memory is its own. */
export function measureInChild(script: string, which: string, outDir: string): ChildMeasurement {
  return inFreshProcess<ChildMeasurement>(script, ['--measure', which, outDir]);
}

/** Bundles the consumer the way it is deployed (esbuild, minified, node platform) and times a cold import. */
export async function bundleConsumer(outDir: string): Promise<{ bytes: number; bytesSdkExternal: number; loadMs: number }> {
  const { build } = await import('esbuild');
  const common = { entryPoints: [path.join(root, 'lambda/landing/handler.ts')], bundle: true, minify: true, platform: 'node' as const, target: 'node20', format: 'esm' as const,
    banner: { js: "import{createRequire as __cr}from'node:module';const require=__cr(import.meta.url);" }, logLevel: 'silent' as const };
  const full = path.join(outDir, 'landing-full.mjs');
  const slim = path.join(outDir, 'landing-sdk-external.mjs');
  await build({ ...common, outfile: full });
  await build({ ...common, outfile: slim, external: ['@aws-sdk/*'] });
  const loads: number[] = [];
  for (let i = 0; i < 5; i++) {
    const script = `const t=performance.now();await import(${JSON.stringify(full)});console.log(performance.now()-t)`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, DATA_BUCKET: 'bench-bucket', AWS_REGION: 'us-east-1' }, encoding: 'utf8' });
    loads.push(Number(out.trim().split('\n').pop()));
  }
  loads.sort((a, b) => a - b);
  return { bytes: statSync(full).size, bytesSdkExternal: statSync(slim).size, loadMs: loads[Math.floor(loads.length / 2)]! };
}

/** The landing benchmark: span rows/s encoded beside DuckDB, file sizes, peak memory, bundle size and load time. */
export async function runLandingBench(): Promise<BenchResult[]> {
  const outDir = mkdtempSync(path.join(tmpdir(), 'landing-bench-'));
  const script = fileURLToPath(import.meta.url);
  try {
    // Alternating fresh processes, fastest of each: interference on a shared machine only adds time,
    // and read_json's rate alone moves by ~1.5× between single runs.
    const samples: Record<string, ChildMeasurement[]> = { 'landing-spans': [], 'duckdb-zstd': [], 'duckdb-json-zstd': [] };
    for (let round = 0; round < LANDING_ROUNDS; round++) {
      for (const [which, list] of Object.entries(samples)) list.push(measureInChild(script, which, outDir));
    }
    const fastest = (list: ChildMeasurement[], seconds = (m: ChildMeasurement) => m.seconds) => list.reduce((a, b) => (seconds(b) < seconds(a) ? b : a));
    const ours = fastest(samples['landing-spans']!);
    const appender = fastest(samples['duckdb-zstd']!);
    const json = fastest(samples['duckdb-json-zstd']!);
    const withSerialising = (m: ChildMeasurement) => m.seconds + (m.serialiseSeconds ?? 0);
    const jsonServed = fastest(samples['duckdb-json-zstd']!, withSerialising);
    // The faster of DuckDB's two ways in is the baseline, read_json without its JSON serialisation: the
    // strictest comparison (the row below counts the serialisation, as a consumer using DuckDB would pay it).
    const duck = appender.seconds <= json.seconds ? appender : json;
    const duckWay = duck === appender ? 'appender from the same JS values' : 'read_json of the same rows (their JSON serialisation not counted)';
    // CPU time (every thread of the process) moves far less with the machine's load than wall time; ours
    // includes V8's parallel GC and compiler threads.
    const cpu = (m: ChildMeasurement) => m.cpuSeconds;
    const oursCpu = fastest(samples['landing-spans']!, cpu);
    const jsonCpu = fastest(samples['duckdb-json-zstd']!, cpu);
    // As this bench measured read_json before it counted the shape check (DuckDB's load + COPY only).
    const duckdbOnly = (m: ChildMeasurement) => m.seconds - (m.checkSeconds ?? 0);
    const jsonAlone = fastest(samples['duckdb-json-zstd']!, duckdbOnly);
    const traces = measureInChild(script, 'landing-traces', outDir);
    const oursRate = ours.rows / ours.seconds;
    const duckRate = duck.rows / duck.seconds;
    const servedRate = jsonServed.rows / withSerialising(jsonServed);
    const spread = (list: ChildMeasurement[], seconds = (m: ChildMeasurement) => m.seconds) => list.map((m) => Math.round(m.rows / seconds(m))).join('/');
    const bundle = await bundleConsumer(outDir);
    const rows = `${ours.rows} span rows (${TRACE_COUNT} traces × ${SPANS_PER_TRACE})`;
    return [
      {
        group: 'landing',
        metric: `span rows/s encoded to Parquet (own column chunks, ${parquetCodec().codec}) vs DuckDB's fastest path`,
        value: Math.round(oursRate),
        unit: 'rows/s',
        baseline: Math.round(duckRate),
        ratio: +(oursRate / duckRate).toFixed(2),
        target: '>= 0.5',
        note: `${rows}; timed from the same decoded traces: ours the shape check (timestamps parsed, tags extracted) + rows from the registry + Parquet; DuckDB the same shape check (its input's timestamps and tags come from it) + its load + COPY (ZSTD), 1 thread; baseline: DuckDB ${duckWay}; same rows, same run, fastest of ${LANDING_ROUNDS} alternating fresh processes each (ours ${spread(samples['landing-spans']!)}, appender ${spread(samples['duckdb-zstd']!)}, read_json ${spread(samples['duckdb-json-zstd']!)} rows/s; read_json without the shape check, as measured before: ${spread(samples['duckdb-json-zstd']!, duckdbOnly)} rows/s, ratio ${(oursRate / (jsonAlone.rows / duckdbOnly(jsonAlone))).toFixed(2)})`,
      },
      {
        group: 'landing',
        metric: 'span rows per CPU second vs DuckDB read_json + COPY per CPU second',
        value: Math.round(oursCpu.rows / oursCpu.cpuSeconds),
        unit: 'rows/s',
        baseline: Math.round(jsonCpu.rows / jsonCpu.cpuSeconds),
        ratio: +(jsonCpu.cpuSeconds / oursCpu.cpuSeconds).toFixed(2),
        note: `${rows}; the same runs, CPU time (user + system, every thread) of the same timed sections instead of wall time, lowest of ${LANDING_ROUNDS} each (ours ${spread(samples['landing-spans']!, cpu)}, read_json ${spread(samples['duckdb-json-zstd']!, cpu)} rows per CPU second)`,
      },
      {
        group: 'landing',
        metric: 'span rows/s vs DuckDB read_json + COPY with the JSON serialisation of its input counted',
        value: Math.round(oursRate),
        unit: 'rows/s',
        baseline: Math.round(servedRate),
        ratio: +(oursRate / servedRate).toFixed(2),
        note: `${rows}; the same read_json runs, each with the time to write its JSON lines from the same decoded traces (JSON.stringify per row, one file) added: ${spread(samples['duckdb-json-zstd']!, withSerialising)} rows/s`,
      },
      {
        group: 'landing',
        metric: 'span rows/s vs DuckDB appending the same JS values',
        value: Math.round(oursRate),
        unit: 'rows/s',
        baseline: Math.round(appender.rows / appender.seconds),
        ratio: +(oursRate / (appender.rows / appender.seconds)).toFixed(2),
        target: '>= 0.5',
        note: `${rows}; DuckDB appender from the same prepared traces + COPY (ZSTD), 1 thread: the same input as the consumer's`,
      },
      { group: 'landing', metric: 'spans Parquet file size', value: +(ours.bytes / 1e6).toFixed(1), unit: 'MB', baseline: +(duck.bytes / 1e6).toFixed(1), ratio: +(ours.bytes / duck.bytes).toFixed(2), note: `${rows}; baseline DuckDB ZSTD` },
      { group: 'landing', metric: 'peak RSS while encoding spans', value: Math.round(ours.peakRssMb), unit: 'MB', baseline: Math.round(duck.peakRssMb), note: `fresh process each; RSS before encoding ${Math.round(ours.baselineRssMb)} MB (input traces generated)` },
      { group: 'landing', metric: 'trace rows/s encoded to Parquet', value: Math.round(traces.rows / traces.seconds), unit: 'rows/s', note: `${traces.rows} trace rows, ${(traces.bytes / 1e6).toFixed(2)} MB` },
      { group: 'landing', metric: 'consumer bundle size', value: +(bundle.bytes / 1024).toFixed(0), unit: 'KiB', note: `esbuild minified, node, ESM, everything bundled; ${(bundle.bytesSdkExternal / 1024).toFixed(0)} KiB with @aws-sdk/* external` },
      { group: 'landing', metric: 'consumer bundle load time (fresh node process)', value: +bundle.loadMs.toFixed(1), unit: 'ms', note: 'median of 5 cold imports of the full bundle' },
    ];
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
}

const isMain = process.argv[1] === fileURLToPath(import.meta.url);
if (isMain && process.argv[2] === '--measure') {
  const which = process.argv[3] ?? '';
  const outDir = process.argv[4] ?? tmpdir();
  mkdirSync(outDir, { recursive: true });
  console.log(JSON.stringify(await measureInThisProcess(which, outDir)));
} else if (isMain) {
  console.table(await runLandingBench());
}
