import { Console } from 'node:console';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CommandOutput, helpAsked, printUsage, reportFailure, UsageError } from '../scripts/cli/command-line.js';
import type { BenchResult } from './types.js';

/** The usage of `npm run bench`, listing the groups `bench/run.ts` registers. */
export function benchUsage(groups: readonly string[]): string {
  return `usage: npm run bench [-- GROUP ...]

Runs the benchmarks of the named groups (all but mutation when none is named), prints one table and writes the rows to
bench/results.json: a group's rows replace only that group's rows. Every speed figure is a ratio against a
baseline measured in the same run. What each figure means: docs/benchmarks.md.

Groups: ${groups.join(', ')}
  --help   this text (runs nothing, writes nothing)
`;
}

/**
 * A group and the module of bench/ that measures it, with the function it exports. `optIn`: measured only when
 * named (a long run outside the usual table, such as mutation testing); a run of every group keeps its rows.
 */
interface Suite {
  group: string;
  file: string;
  exportName: string;
  optIn?: boolean;
}

/** Every group, in the order a full run measures them; a group whose module is absent is not offered. */
const SUITES: readonly Suite[] = [
  { group: 'ingest', file: 'ingest.ts', exportName: 'runIngestBench' },
  { group: 'landing', file: 'landing.ts', exportName: 'runLandingBench' },
  { group: 'landing-worst-case', file: 'landing-worst-case.ts', exportName: 'runLandingWorstCaseBench' },
  { group: 'rate-windows', file: 'rate-windows.ts', exportName: 'runRateWindowBench' },
  { group: 'local-stack', file: 'local-stack.ts', exportName: 'runLocalStackBench' },
  { group: 'hot-org', file: 'hot-org.ts', exportName: 'runHotOrgBench' },
  { group: 'compaction', file: 'compaction.ts', exportName: 'runCompactionBench' },
  { group: 'retention', file: 'retention.ts', exportName: 'runRetentionBench' },
  { group: 'erasure', file: 'erasure.ts', exportName: 'runErasureBench' },
  { group: 'otlp', file: 'otlp.ts', exportName: 'runOtlpBench' },
  { group: 'string-nesting', file: 'string-nesting.ts', exportName: 'runStringNestingBench' },
  { group: 'overload-copies', file: 'overload-copies.ts', exportName: 'runOverloadCopiesBench' },
  { group: 'visibility', file: 'visibility.ts', exportName: 'runVisibilityBench' },
  { group: 'cost', file: 'cost-model.ts', exportName: 'runCostModelBench' },
  { group: 'sdk', file: 'sdk.ts', exportName: 'runSdkBench' },
  { group: 'sdk-python', file: 'sdk-python.ts', exportName: 'runSdkPythonBench' },
  { group: 'event-size', file: 'event-size.ts', exportName: 'runEventSizeBench' },
  { group: 'mutation', file: 'mutation.ts', exportName: 'runMutationBench', optIn: true },
];

/**
 * The groups a command line names, checked before any benchmark runs: `--help` prints the usage (exit status 0),
 * an unknown group or option is refused (exit status 2), and nothing is measured or written either way: then
 * the exit status comes back instead of the groups.
 */
export function benchGroups(argv: readonly string[], groups: readonly string[], out: CommandOutput): string[] | number {
  const usage = benchUsage(groups);
  if (helpAsked(argv)) return printUsage(out.stdout, usage);
  const unknown = argv.filter((arg) => !groups.includes(arg));
  if (unknown.length > 0) {
    const what = unknown[0]!.startsWith('-') ? `unknown option '${unknown[0]}'` : `unknown group${unknown.length > 1 ? 's' : ''} ${unknown.map((g) => `'${g}'`).join(', ')}`;
    return reportFailure(out, 'bench', usage, new UsageError(what));
  }
  return [...argv];
}

/**
 * `npm run bench`: measures the named groups (all when none is named) of the suites found in `benchDir`, prints one
 * table and writes the rows to `benchDir/results.json`. A benchmark that throws rejects, with its stack.
 */
export async function benchCommand(argv: readonly string[], out: CommandOutput, benchDir: string): Promise<number> {
  const suites = SUITES.filter((suite) => existsSync(join(benchDir, suite.file)));
  // Group names; `--name value` options are the groups' own (e.g. `--concurrency 8`, `--minutes 2`), which they read
  // from process.argv. --help is the one option read here: it must reach benchGroups, which prints the usage.
  const named = argv.filter((arg, i) => !arg.startsWith('--') && !argv[i - 1]?.startsWith('--'));
  const only = benchGroups([...named, ...argv.filter((arg) => arg === '--help' || arg === '-h')], suites.map((suite) => suite.group), out);
  if (typeof only === 'number') return only;

  const results: BenchResult[] = [];
  for (const suite of suites) {
    if (only.length > 0 ? !only.includes(suite.group) : suite.optIn) continue;
    const module = (await import(`./${suite.file.replace(/\.ts$/, '.js')}`)) as Record<string, () => Promise<BenchResult[]>>;
    const run = module[suite.exportName];
    if (run) results.push(...(await run()));
  }

  const rows = results.map((r) => ({
    group: r.group,
    metric: r.metric,
    value: `${r.value} ${r.unit}`,
    baseline: r.baseline === undefined ? '' : `${r.baseline} ${r.unit}`,
    ratio: r.ratio === undefined ? '' : String(r.ratio),
    target: r.target ?? '',
  }));
  new Console({ stdout: out.stdout as NodeJS.WritableStream }).table(rows);
  // Every run keeps the rows of the groups it did not measure (`npm run bench -- hot-org` keeps all others; a full
  // run keeps the opt-in groups').
  const resultsFile = join(benchDir, 'results.json');
  const ranGroups = new Set(results.map((r) => r.group));
  const kept = !existsSync(resultsFile)
    ? []
    : ((JSON.parse(readFileSync(resultsFile, 'utf8')) as { results?: BenchResult[] }).results ?? []).filter((r) => !ranGroups.has(r.group));
  writeFileSync(resultsFile, `${JSON.stringify({ measuredAt: new Date().toISOString(), node: process.version, results: [...kept, ...results] }, null, 2)}\n`);
  out.stdout.write('Written to bench/results.json\n');
  return 0;
}
