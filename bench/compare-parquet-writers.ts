/**
 * The Parquet writer candidates for the landing consumer, on the real span schema and the same rows:
 * speed, file size, peak memory (each in a fresh process), codec and logical types, bundle size.
 * `npx tsx bench/compare-parquet-writers.ts` prints the table that docs/landing.md quotes.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spanBatches } from '../lambda/datasets/column-batches.js';
import { type LandableTrace, SPANS } from '../lambda/datasets/registry.js';
import { writeParquet } from '../lambda/datasets/parquet/parquet-writer.js';
import { duckdbJsonWriteSpans, duckdbWriteSpans, landable, peakRssMb, syntheticTraces } from './landing.js';

const TRACE_COUNT = Number(process.env.TRACES ?? 2_000);
const SPANS_PER_TRACE = 50;
const ROW_GROUP = 10_000;
let jsonTimedSeconds: number | undefined;

type Candidate = (traces: LandableTrace[], outDir: string) => Promise<number>;

async function parquetWasm(traces: LandableTrace[], compression: 'ZSTD' | 'SNAPPY'): Promise<number> {
  const require = createRequire(import.meta.url);
  const wasm = require('parquet-wasm/node') as typeof import('parquet-wasm/node');
  const arrow = await import('apache-arrow');
  const types = {
    string: new arrow.Utf8(),
    nullable_string: new arrow.Utf8(),
    int32: new arrow.Int32(),
    int64: new arrow.Int64(),
    double: new arrow.Float64(),
    timestamp: new arrow.TimestampMicrosecond('UTC'),
    string_list: new arrow.List(new arrow.Field('element', new arrow.Utf8(), false)),
  };
  const fields = SPANS.columns.map((c) => new arrow.Field(c.name, types[c.type], c.type === 'nullable_string'));
  const schema = new arrow.Schema(fields);
  const batches: InstanceType<typeof arrow.RecordBatch>[] = [];
  for (const batch of spanBatches(traces, ROW_GROUP)) {
    const children = SPANS.columns.map((c, i) => {
      const values = batch.columns[i]!;
      // Fixed-width columns become Arrow buffers directly; strings and lists go through Arrow's builders.
      const fixedWidth = c.type === 'int32' || c.type === 'int64' || c.type === 'double' || c.type === 'timestamp';
      const make = (fixedWidth ? (type: unknown) => arrow.makeData({ type, length: batch.rows, data: values } as never) : (type: unknown) => (arrow.vectorFromArray as unknown as (v: unknown, t: unknown) => { data: unknown[] })(values, type).data[0]) as (type: unknown) => unknown;
      return make(types[c.type]) as never;
    });
    const struct = arrow.makeData({ type: new arrow.Struct(fields), length: batch.rows, children });
    batches.push(new arrow.RecordBatch(schema, struct));
  }
  const table = new arrow.Table(schema, batches);
  const props = new wasm.WriterPropertiesBuilder().setCompression(wasm.Compression[compression]).setMaxRowGroupSize(ROW_GROUP).build();
  const bytes = wasm.writeParquet(wasm.Table.fromIPCStream(arrow.tableToIPC(table, 'stream')), props);
  return bytes.byteLength;
}

/**
 * Not in the default install: its dependencies ask for Node >= 22 and warn EBADENGINE on every
 * `npm ci` of an older npm Node. `npm install --no-save @dsnp/parquetjs@1.8.8` adds it for this comparison.
 */
const PARQUETJS = '@dsnp/parquetjs';

/** The part of @dsnp/parquetjs used here. */
interface Parquetjs {
  ParquetSchema: new (fields: never) => unknown;
  ParquetWriter: {
    openFile(schema: unknown, file: string): Promise<{ setRowGroupSize(rows: number): void; appendRow(row: Record<string, unknown>): Promise<void>; close(): Promise<void> }>;
  };
}

async function parquetjs(traces: LandableTrace[], outDir: string): Promise<number> {
  const module = (await import(PARQUETJS).catch(() => {
    throw new Error(`${PARQUETJS} is not installed: npm install --no-save ${PARQUETJS}@1.8.8`);
  })) as Parquetjs;
  const { ParquetSchema, ParquetWriter } = module;
  const text = { type: 'UTF8', compression: 'SNAPPY' } as const;
  const schema = new ParquetSchema(
    Object.fromEntries(
      SPANS.columns.map((c) => {
        const field = {
          string: text,
          nullable_string: { ...text, optional: true },
          int32: { type: 'INT32', compression: 'SNAPPY' },
          int64: { type: 'INT64', compression: 'SNAPPY' },
          double: { type: 'DOUBLE', compression: 'SNAPPY' },
          timestamp: { type: 'TIMESTAMP_MICROS', compression: 'SNAPPY' },
          string_list: { ...text, repeated: true },
        }[c.type];
        return [c.name, field];
      }),
    ) as never,
  );
  const file = path.join(outDir, 'parquetjs.parquet');
  const writer = await ParquetWriter.openFile(schema, file);
  writer.setRowGroupSize(ROW_GROUP);
  for (const batch of spanBatches(traces, ROW_GROUP)) {
    for (let r = 0; r < batch.rows; r++) {
      const row: Record<string, unknown> = {};
      SPANS.columns.forEach((c, i) => {
        const value = (batch.columns[i] as ArrayLike<unknown>)[r];
        // parquetjs takes TIMESTAMP_MICROS as a number or Date, and INT64 as a number.
        row[c.name] = typeof value === 'bigint' ? Number(value) : value;
      });
      await writer.appendRow(row);
    }
  }
  await writer.close();
  return statSync(file).size;
}


const CANDIDATES: Record<string, { candidate: Candidate; codec: string; types: string; bundle?: string }> = {
  // The landing writer as it is now: hyparquet-writer plus our own column chunks, node:zlib's codec.
  'hyparquet-writer': {
    candidate: async (traces) => writeParquet(SPANS, spanBatches(traces, ROW_GROUP)).bytes.byteLength,
    codec: 'ZSTD on Node >= 22.15, else GZIP (node:zlib); SNAPPY built in',
    types: 'TIMESTAMP(MICROS,UTC), INT64, DOUBLE, LIST<STRING>',
    bundle: "export { ParquetWriter, ByteWriter } from 'hyparquet-writer';",
  },
  'parquet-wasm + apache-arrow (ZSTD)': {
    candidate: (traces) => parquetWasm(traces, 'ZSTD'),
    codec: 'ZSTD, SNAPPY, GZIP, LZ4, BROTLI',
    types: 'all Arrow types',
    bundle: "export * from 'parquet-wasm/node'; export * from 'apache-arrow';",
  },
  'parquet-wasm + apache-arrow (SNAPPY)': { candidate: (traces) => parquetWasm(traces, 'SNAPPY'), codec: 'SNAPPY', types: 'all Arrow types' },
  '@dsnp/parquetjs': {
    candidate: parquetjs,
    codec: 'SNAPPY, GZIP, BROTLI (no ZSTD)',
    types: 'TIMESTAMP_MICROS converted type only (no isAdjustedToUTC), INT64 as JS number, repeated field instead of LIST',
    bundle: "export { ParquetWriter, ParquetSchema } from '@dsnp/parquetjs';",
  },
  'DuckDB appender + COPY (ZSTD)': { candidate: (traces, out) => duckdbWriteSpans(traces, path.join(out, 'duck.parquet'), 'zstd'), codec: 'ZSTD, SNAPPY, GZIP, …', types: 'all', bundle: 'native addon (~60 MB), not bundleable' },
  'DuckDB read_json + COPY (ZSTD)': { candidate: async (traces, out) => { const r = await duckdbJsonWriteSpans(traces, out); jsonTimedSeconds = r.seconds; return r.bytes; }, codec: 'ZSTD', types: 'all', bundle: 'native addon' },
};

async function measure(name: string, outDir: string): Promise<void> {
  const entry = CANDIDATES[name];
  if (!entry) throw new Error(`unknown candidate ${name}`);
  const traces = landable(syntheticTraces(TRACE_COUNT, SPANS_PER_TRACE));
  const before = peakRssMb();
  const started = process.hrtime.bigint();
  const bytes = await entry.candidate(traces, outDir);
  const seconds = jsonTimedSeconds ?? Number(process.hrtime.bigint() - started) / 1e9;
  console.log(JSON.stringify({ seconds, bytes, peakRssMb: peakRssMb(), beforeRssMb: before }));
}

async function bundleBytes(source: string, outDir: string): Promise<number> {
  const { build } = await import('esbuild');
  const entry = path.join(outDir, `entry-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(entry, source);
  const outfile = `${entry}.out.mjs`;
  await build({ entryPoints: [entry], bundle: true, minify: true, platform: 'node', format: 'esm', outfile, logLevel: 'silent', nodePaths: [path.resolve('node_modules')], loader: { '.wasm': 'file' } });
  let total = statSync(outfile).size;
  if (source.includes('parquet-wasm')) total += statSync(path.resolve('node_modules/parquet-wasm/node/parquet_wasm_bg.wasm')).size;
  return total;
}

async function main(): Promise<void> {
  const outDir = mkdtempSync(path.join(tmpdir(), 'parquet-writers-'));
  const rows = TRACE_COUNT * SPANS_PER_TRACE;
  const table: Record<string, string | number>[] = [];
  try {
    for (const [name, entry] of Object.entries(CANDIDATES)) {
      const run = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--measure', name, outDir], { encoding: 'utf8' });
      if (run.status !== 0) {
        table.push({ writer: name, error: run.stderr.trim().split('\n').slice(0, 2).join(' ') });
        continue;
      }
      const m = JSON.parse(run.stdout.trim().split('\n').pop() ?? '{}') as { seconds: number; bytes: number; peakRssMb: number; beforeRssMb: number };
      const bundle = entry.bundle === undefined ? '' : entry.bundle.includes('export') ? `${((await bundleBytes(entry.bundle, outDir)) / 1024).toFixed(0)} KiB` : entry.bundle;
      table.push({
        writer: name,
        'rows/s': Math.round(rows / m.seconds),
        'file MB': +(m.bytes / 1e6).toFixed(1),
        'peak RSS MB': Math.round(m.peakRssMb),
        'RSS before MB': Math.round(m.beforeRssMb),
        bundle,
        codecs: entry.codec,
        'logical types': entry.types,
      });
    }
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
  console.log(`${rows} span rows (${TRACE_COUNT} traces × ${SPANS_PER_TRACE} spans), row groups of ${ROW_GROUP}, Node ${process.version}, one process per writer`);
  console.table(table);
}

if (process.argv[2] === '--measure') {
  await measure(process.argv[3] ?? '', process.argv[4] ?? tmpdir());
} else {
  await main();
}
