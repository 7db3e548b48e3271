import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * What makes a mutant's jest run short (test/support/jest-mutation-*.cjs): it loads only the files holding the tests
 * that cover the mutant, and stops at its first failing test. Either, wrong, would let a mutant live that its tests
 * kill: a file left out, or a test skipped, that would have failed.
 */
interface Sequencer {
  sort(tests: { path: string }[]): { path: string }[];
}
interface Loaded {
  Sequencer: new (options: { contexts: unknown[]; globalConfig: { testNamePattern?: string } }) => Sequencer;
  Environment: { prototype: { handleTestEvent(event: TestEvent): Promise<void> } };
}
interface TestEvent {
  name: string;
  test: { mode?: string; errors: unknown[] };
}

/** Fresh copies of both modules (each keeps its state for the process), reading `index` as the first run's record. */
function load(index: [file: string, test: string][] | undefined): Loaded {
  const dir = mkdtempSync(path.join(tmpdir(), 'mutation-index-'));
  dirs.push(dir);
  const file = path.join(dir, 'test-index.jsonl');
  if (index) writeFileSync(file, index.map((entry) => `${JSON.stringify(entry)}\n`).join(''));
  process.env.MUTATION_TEST_INDEX = file;
  let loaded: Loaded | undefined;
  jest.isolateModules(() => {
    /* eslint-disable @typescript-eslint/no-require-imports */
    loaded = {
      Sequencer: require('../../support/jest-mutation-sequencer.cjs'),
      Environment: require('../../support/jest-mutation-environment.cjs'),
    };
    /* eslint-enable @typescript-eslint/no-require-imports */
  });
  return loaded as Loaded;
}

const dirs: string[] = [];
const savedEnv = { index: process.env.MUTATION_TEST_INDEX, mutant: process.env.__STRYKER_ACTIVE_MUTANT__ };
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  for (const [name, value] of [['MUTATION_TEST_INDEX', savedEnv.index], ['__STRYKER_ACTIVE_MUTANT__', savedEnv.mutant]] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

const files = ['/s/a.test.ts', '/s/b.test.ts', '/s/c.test.ts'].map((p) => ({ path: p }));
const index: [string, string][] = [
  ['/s/a.test.ts', 'claims takes a UUID'],
  ['/s/a.test.ts', 'claims refuses a tab'],
  ['/s/b.test.ts', 'store Takes a UUID twice'],
  ['/s/c.test.ts', 'shared name'],
  ['/s/b.test.ts', 'shared name'],
];
const pathsRun = (loaded: Loaded, testNamePattern?: string) =>
  new loaded.Sequencer({ contexts: [], globalConfig: testNamePattern === undefined ? {} : { testNamePattern } }).sort(files).map((t) => t.path);

describe("a mutant's test files (jest-mutation-sequencer.cjs)", () => {
  it('are the files holding a test its pattern matches', () => {
    expect(pathsRun(load(index), '(claims refuses a tab)')).toEqual(['/s/a.test.ts']);
  });

  it('are matched as jest matches a name: anywhere in it, in any case', () => {
    expect(pathsRun(load(index), '(takes a UUID)')).toEqual(['/s/a.test.ts', '/s/b.test.ts']);
  });

  it('are every file holding a test of a name two files share', () => {
    expect(pathsRun(load(index), '(shared name)|(claims refuses a tab)')).toEqual(files.map((t) => t.path));
  });

  it('are all of them with no pattern (Stryker’s first run, a mutant that every test must see)', () => {
    expect(pathsRun(load(index))).toEqual(files.map((t) => t.path));
  });

  it('are all of them when no recorded test matches, or nothing was recorded', () => {
    expect(pathsRun(load(index), '(a test added since)')).toEqual(files.map((t) => t.path));
    expect(pathsRun(load(undefined), '(claims refuses a tab)')).toEqual(files.map((t) => t.path));
  });
});

describe("a mutant's run stops at its first failing test (jest-mutation-environment.cjs)", () => {
  const event = (name: string, errors: unknown[] = []): TestEvent => ({ name, test: { errors } });
  const handle = (loaded: Loaded, e: TestEvent) => loaded.Environment.prototype.handleTestEvent.call({}, e);

  it('skips the tests that start after a failure, and only those', async () => {
    const loaded = load(index);
    process.env.__STRYKER_ACTIVE_MUTANT__ = '7';
    new loaded.Sequencer({ contexts: [], globalConfig: {} });
    const first = event('test_start');
    await handle(loaded, first);
    await handle(loaded, event('test_done'));
    const second = event('test_start');
    await handle(loaded, second);
    await handle(loaded, event('test_done', [new Error('killed')]));
    const third = event('test_start');
    await handle(loaded, third);
    expect([first.test.mode, second.test.mode, third.test.mode]).toEqual([undefined, undefined, 'skip']);
  });

  it('starts each run afresh, even for the same mutant', async () => {
    const loaded = load(index);
    process.env.__STRYKER_ACTIVE_MUTANT__ = '7';
    new loaded.Sequencer({ contexts: [], globalConfig: {} });
    await handle(loaded, event('test_done', [new Error('killed')]));
    new loaded.Sequencer({ contexts: [], globalConfig: {} });
    const next = event('test_start');
    await handle(loaded, next);
    expect(next.test.mode).toBeUndefined();
  });

  it('does not carry one mutant’s failure to the next', async () => {
    const loaded = load(index);
    process.env.__STRYKER_ACTIVE_MUTANT__ = '7';
    await handle(loaded, event('test_done', [new Error('killed')]));
    process.env.__STRYKER_ACTIVE_MUTANT__ = '8';
    const next = event('test_start');
    await handle(loaded, next);
    expect(next.test.mode).toBeUndefined();
  });

  it('never stops Stryker’s first run of all the tests (no mutant active)', async () => {
    const loaded = load(index);
    delete process.env.__STRYKER_ACTIVE_MUTANT__;
    await handle(loaded, event('test_done', [new Error('a failure Stryker must see')]));
    const next = event('test_start');
    await handle(loaded, next);
    expect(next.test.mode).toBeUndefined();
  });
});
