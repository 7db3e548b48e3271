import { reportFailure, UsageError } from '../scripts/cli/command-line.js';

/** The usage of `npm run bench`, listing the groups `bench/run.ts` registers. */
export function benchUsage(groups: readonly string[]): string {
  return `usage: npm run bench [-- GROUP ...]

Runs the benchmarks of the named groups (all when none is named), prints one table and writes the rows to
bench/results.json: a group's rows replace only that group's rows. Every speed figure is a ratio against a
baseline measured in the same run. What each figure means: docs/benchmarks.md.

Groups: ${groups.join(', ')}
  --help   this text (runs nothing, writes nothing)
`;
}

/**
 * The groups a command line names, checked before any benchmark runs: `--help` prints the usage and exits 0,
 * an unknown group or option is refused with exit status 2, and nothing is measured or written either way.
 */
export function benchGroups(argv: readonly string[], groups: readonly string[]): string[] {
  const usage = benchUsage(groups);
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage);
    process.exit(0);
  }
  const unknown = argv.filter((arg) => !groups.includes(arg));
  if (unknown.length > 0) {
    const what = unknown[0]!.startsWith('-') ? `unknown option '${unknown[0]}'` : `unknown group${unknown.length > 1 ? 's' : ''} ${unknown.map((g) => `'${g}'`).join(', ')}`;
    reportFailure('bench', usage, new UsageError(what));
    process.exit(2);
  }
  return [...argv];
}
