// The test files of one mutant's run (bench/mutation.ts). Stryker's jest runner narrows a mutant's run to the tests
// that cover it by name only (`testNamePattern`): jest still loads every test file of the module, and their imports,
// to find that most of their tests do not match. That loading was most of a mutant's ~0.4 s. The mutation setup
// (jest-mutation-setup.cjs) writes, during Stryker's first run of all the tests, which file holds each test
// (MUTATION_TEST_INDEX); a mutant's run then loads only the files holding a test its pattern matches, matched as jest
// matches it (case-insensitive, anywhere in the name). Every test jest would have run still runs. A concurrent test
// would be missing from the index (no beforeEach runs for it): the modules' tests have none (mutation-modules.test.ts).
const { existsSync, readFileSync } = require('node:fs');
const Sequencer = require('@jest/test-sequencer').default;
const { startRun } = require('./jest-mutation-environment.cjs');

/** Test name → the files holding a test of that name, read once the first run is over (one per process). */
let filesByTestName;

function testIndex() {
  if (filesByTestName !== undefined) return filesByTestName;
  const file = process.env.MUTATION_TEST_INDEX;
  if (!file || !existsSync(file)) return new Map();
  filesByTestName = new Map();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line === '') continue;
    const [testPath, testName] = JSON.parse(line);
    const files = filesByTestName.get(testName) ?? new Set();
    files.add(testPath);
    filesByTestName.set(testName, files);
  }
  return filesByTestName;
}

/** The files holding a test the pattern matches; undefined (run them all) when none is known to. */
function filesMatching(testNamePattern) {
  const pattern = new RegExp(testNamePattern, 'i');
  const files = new Set();
  for (const [testName, paths] of testIndex()) {
    if (pattern.test(testName)) for (const path of paths) files.add(path);
  }
  return files.size === 0 ? undefined : files;
}

class MutationSequencer extends Sequencer {
  constructor(options) {
    super(options);
    // jest makes a sequencer at the start of each run.
    startRun();
    this.testNamePattern = options.globalConfig.testNamePattern;
  }

  sort(tests) {
    const files = this.testNamePattern ? filesMatching(this.testNamePattern) : undefined;
    return files === undefined ? [...tests] : tests.filter((test) => files.has(test.path));
  }

  // Nothing to learn for the next run: the default writes each file's timing to jest's cache after every run.
  cacheResults() {}
}

module.exports = MutationSequencer;
