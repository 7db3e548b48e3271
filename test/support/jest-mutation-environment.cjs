// The test environment of a mutation run (bench/mutation.ts): Node's, and a mutant's run stops at its first failing
// test. Stryker needs one failing test to count a mutant killed, and asks its runners to stop there (`disableBail`
// false), but jest cannot be told to from the API Stryker drives (jestjs/jest#11766): every test covering the mutant
// ran, the slow simulations too, for each killed mutant. Here the tests that would start after a failure are skipped
// instead. Stryker's first run of all the tests (no mutant active) never stops. A retried test (jest.retryTimes) would
// be skipped on its retry: the modules' tests retry none (test/unit/bench/mutation-modules.test.ts).
const { TestEnvironment } = require('jest-environment-node');

/** The mutant whose run saw a failing test: jest loads this module once per process, for every file of every run. */
const bail = { failedUnder: undefined };

/** A run starts (jest-mutation-sequencer.cjs): no test of it has failed yet. */
function startRun() {
  bail.failedUnder = undefined;
}

class MutationEnvironment extends TestEnvironment {
  async handleTestEvent(event) {
    const mutant = process.env.__STRYKER_ACTIVE_MUTANT__;
    if (mutant === undefined) return;
    // jest-circus decides whether to skip a test after dispatching its test_start.
    if (event.name === 'test_start' && bail.failedUnder === mutant) event.test.mode = 'skip';
    else if (event.name === 'test_done' && event.test.errors.length > 0) bail.failedUnder = mutant;
  }
}

module.exports = MutationEnvironment;
module.exports.startRun = startRun;
