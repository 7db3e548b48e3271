const shared = require('./test/support/jest-shared.cjs');

module.exports = {
  // Integration suites start real engines; a generous timeout keeps a slow machine from failing them.
  testTimeout: 120000,
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts', '<rootDir>/test/infra/**/*.test.ts'] },
    { ...shared, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.test.ts'] },
  ],
};
