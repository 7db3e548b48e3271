// The jest configuration of one mutation run (bench/mutation.ts): the unit setup, only the module's tests.
// The test files come in MUTATION_TESTS (comma-separated paths from the project root).
const path = require('node:path');
const shared = require('./jest-shared.cjs');

const tests = (process.env.MUTATION_TESTS ?? '').split(',').filter(Boolean);
if (tests.length === 0) throw new Error('MUTATION_TESTS names no test file');
module.exports = {
  ...shared,
  setupFilesAfterEnv: ['<rootDir>/test/support/jest-mutation-setup.cjs'],
  testSequencer: '<rootDir>/test/support/jest-mutation-sequencer.cjs',
  // A path, not `<rootDir>`: Stryker's environment wrapper resolves the name itself.
  testEnvironment: path.join(__dirname, 'jest-mutation-environment.cjs'),
  testTimeout: 60000,
  testMatch: tests.map((file) => `<rootDir>/${file}`),
};
