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
