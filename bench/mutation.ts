import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MUTATION_MODULES, type MutationModule } from './mutation-modules.js';
import type { BenchResult } from './types.js';

/**
 * `npm run bench -- mutation [--modules a,b]`: StrykerJS over each critical module with that module's own tests,
 * one row per module (score = killed ÷ (killed + survived + no coverage); timeouts count as killed, compile errors
 * found by the TypeScript checker are not mutants). Incremental: a run reuses the last run's results for code and
 * tests that did not change (`.local/mutation/<module>/incremental.json`). Not part of `npm test`.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const TARGET = 0.85;

type Status = 'Killed' | 'Survived' | 'NoCoverage' | 'Timeout' | 'CompileError' | 'RuntimeError' | 'Ignored' | 'Pending';
interface ReportMutant {
  mutatorName: string;
  replacement?: string;
  status: Status;
  location: { start: { line: number; column: number } };
}
interface Report {
  files: Record<string, { mutants: ReportMutant[] }>;
}

export interface ModuleScore {
  module: MutationModule;
  killed: number;
  survivors: { file: string; line: number; column: number; mutator: string; replacement: string; status: Status }[];
  compileErrors: number;
  seconds: number;
}

/**
 * The TypeScript checker type-checks each mutant's program: a program of the module's files (and what they import),
 * not of the whole project, is what keeps a run within minutes. Written where the sandbox copies it.
 */
const CHECKER_TSCONFIG = '.local/mutation-tsconfig.json';

function writeCheckerTsconfig(module: MutationModule): void {
  const base = module.runner === 'jest' ? '../tsconfig.json' : '../sdk/typescript/tsconfig.json';
  const include = module.mutate.filter((pattern) => !pattern.startsWith('!')).map((pattern) => `../${pattern.replace(/:\d+-\d+$/, '')}`);
  const types = module.runner === 'jest' ? ['node'] : undefined;
  writeFileSync(join(root, CHECKER_TSCONFIG), `${JSON.stringify({ extends: base, compilerOptions: { noEmit: true, ...(types && { types }) }, include }, null, 2)}\n`);
}

function strykerConfig(module: MutationModule, dir: string): Record<string, unknown> {
  const common = {
    $schema: '../../../node_modules/@stryker-mutator/core/schema/stryker-schema.json',
    mutate: module.mutate,
    // Stryker's TypeScript checker with tsc's timers made prompt (the file says why).
    checkers: ['typescript-prompt'],
    plugins: ['@stryker-mutator/*', join(root, 'test/support/stryker-typescript-checker.mjs')],
    coverageAnalysis: 'perTest',
    incremental: true,
    incrementalFile: relative(root, join(dir, 'incremental.json')),
    concurrency: 2,
    // Stryker's default: a mutant is taken to hang when its tests run 1.5× their unmutated time plus 5 s. The
    // modules' tests have no waits left that a mutant stretches (docs/mutation.md), so only real hangs reach it.
    timeoutMS: 5000,
    reporters: ['json', 'clear-text', 'progress-append-only'],
    jsonReporter: { fileName: relative(root, join(dir, 'report.json')) },
    clearTextReporter: { allowColor: false, logTests: false, reportMutants: true, reportScoreTable: true },
    tempDirName: relative(root, join(dir, 'sandbox')),
    cleanTempDir: true,
    // The sandbox is a copy of the project: leave out what no unit test reads.
    tsconfigFile: CHECKER_TSCONFIG,
    ignorePatterns: ['/cdk.out', '/.local/*', `!/${CHECKER_TSCONFIG}`, '/sdk/.tmp', '/sdk/python', '/third_party', '/.git', ...(module.runner === 'jest' ? ['/sdk/typescript/build'] : [])],
  };
  if (module.runner === 'jest') {
    return {
      ...common,
      testRunner: 'jest',
      jest: { projectType: 'custom', configFile: 'test/support/jest-mutation.config.cjs', enableFindRelatedTests: false },
      // The unit setup compiles with SWC, which checks no types: the `// @ts-nocheck` Stryker would write atop the
      // sandbox's files serves nothing, and changes files a test reads as text (the generated normalizer).
      disableTypeChecks: false,
    };
  }
  // The SDK's tests are tsc's output. Built in the project before the run (buildSdk), they are among the files Stryker
  // reads: its incremental diff finds them unchanged and reuses their results. Left out, they were "removed" tests to
  // it, and every run of these modules was a full one.
  return {
    ...common,
    testRunner: 'tap',
    // The SDK's tests are node:test files run from tsc's output, as `npm run test:sdk` runs them.
    // execa splits this on spaces, no shell: the paths must have none.
    buildCommand: SDK_BUILD.join(' '),
    tap: { testFiles: module.tests, nodeArgs: ['--test-reporter=tap', '{{testFile}}'], forceBail: true },
  };
}

/** tsc over the TypeScript SDK, its sources and tests, into `sdk/typescript/build/` (as `npm run test:sdk` builds it). */
const SDK_BUILD = [process.execPath, join(root, 'node_modules/typescript/bin/tsc'), '-p', 'sdk/typescript/tsconfig.json'];

function buildSdk(): void {
  const [command, ...args] = SDK_BUILD as [string, ...string[]];
  const built = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  if (built.status !== 0) throw new Error(`building the TypeScript SDK failed (exit ${built.status})`);
}

function runStryker(module: MutationModule, dir: string): Promise<void> {
  const configFile = join(dir, 'stryker.config.json');
  writeCheckerTsconfig(module);
  writeFileSync(configFile, `${JSON.stringify(strykerConfig(module, dir), null, 2)}\n`);
  // Which file holds each test, written afresh by each run's first run of all the tests (jest-mutation-sequencer.cjs).
  const testIndex = join(dir, 'test-index.jsonl');
  rmSync(testIndex, { force: true });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'node_modules/@stryker-mutator/core/bin/stryker.js'), 'run', relative(root, configFile)], {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, MUTATION_TESTS: module.tests.join(','), MUTATION_TEST_INDEX: testIndex, TRACE_INGEST_CONFORMANCE_DIR: join(root, 'sdk/conformance') },
    });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`stryker failed on ${module.name} (exit ${code})`))));
  });
}

export function scoreReport(module: MutationModule, report: Report, seconds: number): ModuleScore {
  const survivors: ModuleScore['survivors'] = [];
  let killed = 0;
  let compileErrors = 0;
  for (const [file, { mutants }] of Object.entries(report.files)) {
    for (const mutant of mutants) {
      if (mutant.status === 'Killed' || mutant.status === 'Timeout') killed += 1;
      else if (mutant.status === 'Survived' || mutant.status === 'NoCoverage') {
        const { line, column } = mutant.location.start;
        survivors.push({ file, line, column, mutator: mutant.mutatorName, replacement: mutant.replacement ?? '', status: mutant.status });
      } else if (mutant.status === 'CompileError') compileErrors += 1;
    }
  }
  return { module, killed, survivors, compileErrors, seconds };
}

export async function measureModule(module: MutationModule): Promise<ModuleScore> {
  const dir = join(root, '.local', 'mutation', module.name);
  mkdirSync(dir, { recursive: true });
  const started = performance.now();
  await runStryker(module, dir);
  const seconds = (performance.now() - started) / 1000;
  const report = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as Report;
  return scoreReport(module, report, seconds);
}

function wantedModules(argv: readonly string[]): readonly MutationModule[] {
  const at = argv.indexOf('--modules');
  if (at < 0) return MUTATION_MODULES;
  const names = (argv[at + 1] ?? '').split(',').filter(Boolean);
  const unknown = names.filter((name) => !MUTATION_MODULES.some((m) => m.name === name));
  if (unknown.length > 0 || names.length === 0) {
    throw new Error(`--modules takes names from: ${MUTATION_MODULES.map((m) => m.name).join(', ')}${unknown.length ? ` (unknown: ${unknown.join(', ')})` : ''}`);
  }
  return MUTATION_MODULES.filter((m) => names.includes(m.name));
}

export async function runMutationBench(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  const started = performance.now();
  const modules = wantedModules(process.argv.slice(2));
  // The SDK's modules all test the same build: made once, before the first of them.
  if (modules.some((module) => module.runner === 'sdk-typescript')) buildSdk();
  for (const module of modules) {
    const score = await measureModule(module);
    const total = score.killed + score.survivors.length;
    const ratio = total === 0 ? 1 : score.killed / total;
    for (const s of score.survivors) {
      console.log(`[mutation] ${module.name}: ${s.status} ${s.file}:${s.line}:${s.column} ${s.mutator} → ${s.replacement.replace(/\s+/g, ' ').slice(0, 120)}`);
    }
    results.push({
      group: 'mutation',
      metric: `mutation score: ${module.title} (${module.name}; ${score.killed} of ${total} mutants killed, ${score.compileErrors} compile errors left out, ${Math.round(score.seconds)} s)`,
      value: Math.round(ratio * 1000) / 10,
      unit: '%',
      ratio: Math.round(ratio * 1000) / 1000,
      target: `>= ${TARGET}`,
    });
  }
  console.log(`[mutation] wall time ${Math.round((performance.now() - started) / 1000)} s`);
  return withRowsOfModulesNotRun(results);
}

/**
 * The bench replaces a group's rows with those a run returns: a run of some modules returns the last rows of the
 * others too, so that `--modules a` never drops b's score. In the registry's order.
 */
function withRowsOfModulesNotRun(results: BenchResult[]): BenchResult[] {
  const file = join(root, 'bench', 'results.json');
  const previous = existsSync(file) ? ((JSON.parse(readFileSync(file, 'utf8')) as { results?: BenchResult[] }).results ?? []) : [];
  return mergeMutationRows(previous, results);
}

/** The `mutation` rows after a run: each module's row from this run, else from the last, in the registry's order. */
export function mergeMutationRows(previous: readonly BenchResult[], results: readonly BenchResult[]): BenchResult[] {
  const byModule = new Map<string, BenchResult>();
  for (const row of [...previous.filter((r) => r.group === 'mutation'), ...results]) {
    const name = moduleOfRow(row);
    if (name !== undefined) byModule.set(name, row);
  }
  return MUTATION_MODULES.flatMap((module) => byModule.get(module.name) ?? []);
}

/** The module a row's metric names: `mutation score: <title> (<name>; …)`. */
export function moduleOfRow(row: BenchResult): string | undefined {
  return /\(([a-z0-9-]+);/.exec(row.metric)?.[1];
}
