/* global beforeEach, expect -- jest sets them up before this file runs */
// Set up each test file of a mutation run (bench/mutation.ts).
// - A property that fails under a mutant only needs to fail: fast-check would go on to shrink the counterexample,
//   rerunning the property many times for a smaller one, which tells Stryker nothing and costs every killed mutant
//   seconds.
// - One seed: whether a property's draws catch a mutant is then the same in every run, so a module's score does not
//   move from run to run (npm test keeps drawing afresh).
// - During Stryker's first run of all the tests (no mutant active), write down which file holds each test: a mutant's
//   run then loads only the files that hold the tests covering it (jest-mutation-sequencer.cjs).
const fc = require('fast-check');

fc.configureGlobal({ ...fc.readConfigureGlobal(), endOnFailure: true, seed: 30 });

const testIndex = process.env.MUTATION_TEST_INDEX;
if (testIndex && process.env.__STRYKER_ACTIVE_MUTANT__ === undefined) {
  const { appendFileSync } = require('node:fs');
  beforeEach(() => {
    const { testPath, currentTestName } = expect.getState();
    appendFileSync(testIndex, `${JSON.stringify([testPath, currentTestName])}\n`);
  });
}
