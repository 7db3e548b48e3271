// Jest runs the TypeScript sources through SWC as CommonJS. middy 5+ ships only ESM,
// so its packages are transformed too instead of being ignored like the rest of node_modules;
// so are hyparquet and hyparquet-writer (the Parquet reader and writer, lambda/datasets/parquet/ and compaction; ESM only).
// Shared by jest.config.cjs and the mutation runs (bench/mutation.ts), which run one module's tests at a time.
const path = require('node:path');

const rootDir = path.resolve(__dirname, '..', '..');
const swc = ['@swc/jest', {
  jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
  module: { type: 'commonjs' },
}];
module.exports = {
  rootDir,
  transform: { '^.+\\.(t|j|mj)s$': swc },
  transformIgnorePatterns: ['/node_modules/(?!(@middy|hyparquet|hyparquet-writer)/)'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  testEnvironment: 'node',
  setupFiles: ['<rootDir>/test/support/jest-env.cjs'],
};
