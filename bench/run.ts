import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchGroups } from './command-line.js';
import { runIngestBench } from './ingest.js';
import type { BenchResult } from './types.js';

const here = dirname(fileURLToPath(import.meta.url));
// Group names; `--name value` options are the groups' own (e.g. `--concurrency 8`, `--minutes 2`).
const only = process.argv.slice(2).filter((arg, i, args) => !arg.startsWith('--') && !args[i - 1]?.startsWith('--'));
const wanted = (group: string, optIn = false) => (only.length === 0 && !optIn) || only.includes(group);

/** `optIn`: run only when named (a long run outside the usual table); a run of every group keeps its rows. */
type Suite = { group: string; file: string; exportName: string; optIn?: boolean };
const optionalSuites: Suite[] = [
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

const results: BenchResult[] = [];
// --help is the one option run.ts reads itself: it must reach benchGroups, which prints the usage before anything runs.
const helpAsked = process.argv.slice(2).filter((arg) => arg === '--help' || arg === '-h');
benchGroups([...only, ...helpAsked], ['ingest', ...optionalSuites.filter((suite) => existsSync(join(here, suite.file))).map((suite) => suite.group)]);
if (wanted('ingest')) results.push(...(await runIngestBench()));
for (const suite of optionalSuites) {
  if (!wanted(suite.group, suite.optIn) || !existsSync(join(here, suite.file))) continue;
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
console.table(rows);
// A partial run (`npm run bench -- hot-org`) keeps the other groups' rows from the last run.
const resultsFile = join(here, 'results.json');
const ranGroups = new Set(results.map((r) => r.group));
const kept = !existsSync(resultsFile)
  ? []
  : ((JSON.parse(readFileSync(resultsFile, 'utf8')) as { results?: BenchResult[] }).results ?? []).filter((r) => !ranGroups.has(r.group));
writeFileSync(resultsFile, `${JSON.stringify({ measuredAt: new Date().toISOString(), node: process.version, results: [...kept, ...results] }, null, 2)}\n`);
console.log(`Written to bench/results.json`);
