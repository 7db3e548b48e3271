import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Which folders a module may not import from (README "Layout"): a relative specifier climbing into one of them,
 * static, type-only, re-exported or dynamic. `\x2F` is `/`, which esquery's regex literals cannot hold.
 */
function forbidImports(files, folders, message) {
  const regex = `^(\\.\\.\\x2F)+(${folders.join('|')})(\\x2F|$)`;
  return {
    files,
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex, message }] }],
      'no-restricted-syntax': ['error', { selector: `ImportExpression[source.value=/${regex}/]`, message }],
    },
  };
}

export default tseslint.config(
  { ignores: ['node_modules/', 'cdk.out/', '.local/', 'lambda/ingest/generated/', 'devkit/generated/', 'lambda/shared/domain/generated/', 'coverage/', 'bench/.tmp/', 'sdk/.tmp/', 'sdk/typescript/dist/', 'sdk/typescript/build/', 'sdk/python/build/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  forbidImports(['lambda/**'], ['lib', 'devkit', 'scripts', 'test', 'bench'], 'Lambda code is bundled and deployed alone: it imports only lambda/ and its packages.'),
  forbidImports(['bench/**'], ['test'], 'The bench measures with the development kit (devkit/), never with the tests.'),
  forbidImports(['devkit/**'], ['test', 'bench'], 'The development kit serves scripts, bench and tests; it depends on neither of the last two.'),
  { files: ['**/*.cjs'], languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } } },
);
