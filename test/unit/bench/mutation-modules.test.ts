import { readFileSync } from 'node:fs';
import path from 'node:path';
import { MUTATION_MODULES } from '../../../bench/mutation-modules.js';

const ROOT = path.resolve(__dirname, '../../..');

/** The `file.ts:from-to` patterns of the registry: parts of a file, named by their lines. */
const ranges = MUTATION_MODULES.flatMap((module) =>
  module.mutate.flatMap((pattern) => {
    const match = /^(.+):(\d+)-(\d+)$/.exec(pattern);
    return match ? [{ module: module.name, pattern, file: match[1] as string, from: Number(match[2]), to: Number(match[3]) }] : [];
  }),
);

describe("the mutation registry's line ranges (bench/mutation-modules.ts)", () => {
  it('has some to check', () => {
    expect(ranges.length).toBeGreaterThan(0);
  });

  // A range is written by hand: when its file moves, it would mutate half a function and a piece of the next.
  it.each(ranges)('$pattern ($module) is one whole top-level function', ({ file, from, to }) => {
    const lines = readFileSync(path.join(ROOT, file), 'utf8').split('\n');
    expect(lines[from - 1]).toMatch(/^(export )?(async )?function /);
    expect(lines[to - 1]).toBe('}');
    expect(lines.slice(from, to - 1).filter((line) => line === '}')).toEqual([]);
  });
});

// A mutant's jest run skips the tests after its first failure and loads only the files holding the tests that cover
// it (test/support/jest-mutation-{environment,sequencer}.cjs). A retried test (jest.retryTimes) would be skipped on its
// retry, and a concurrent test is never written in the test index (no beforeEach runs for it): either could let a
// mutant live that its tests kill. The modules' tests use neither.
describe("the mutation modules' jest tests", () => {
  const files = MUTATION_MODULES.filter((module) => module.runner === 'jest').flatMap((module) => module.tests);

  it('are listed', () => {
    expect(files.length).toBeGreaterThan(0);
  });

  it.each(files)('%s retries no test and runs none concurrently', (file) => {
    const source = readFileSync(path.join(ROOT, file), 'utf8');
    expect(source).not.toMatch(/retryTimes|\.concurrent\b/);
  });
});
