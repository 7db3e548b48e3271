// Jest runs the TypeScript sources through SWC as CommonJS. middy 5+ ships only ESM,
// so its packages are transformed too instead of being ignored like the rest of node_modules;
// so are hyparquet and hyparquet-writer (the Parquet reader and writer, lambda/datasets/parquet/ and compaction; ESM only).
const swc = ['@swc/jest', {
  jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
  module: { type: 'commonjs' },
}];
const shared = {
  transform: { '^.+\\.(t|j|mj)s$': swc },
  transformIgnorePatterns: ['/node_modules/(?!(@middy|hyparquet|hyparquet-writer)/)'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  testEnvironment: 'node',
  setupFiles: ['<rootDir>/test/support/jest-env.cjs'],
};
module.exports = {
  // Integration suites start real engines; a generous timeout keeps a slow machine from failing them.
  testTimeout: 120000,
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts', '<rootDir>/test/infra/**/*.test.ts'] },
    { ...shared, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.test.ts'] },
  ],
};
