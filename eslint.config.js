import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** A relative specifier climbing into one of `folders` (README "Layout"). `\x2F` is `/`, which esquery's regex literals cannot hold. */
const upInto = (folders, message) => ({ regex: `^(\\.\\.\\x2F)+(${folders.join('|')})(\\x2F|$)`, message });

/**
 * Imports a module may not make, each a regex over the specifier and the reason: static, type-only, re-exported or
 * dynamic. A later block for the same files replaces an earlier one's options, so a narrower block repeats the wider one's.
 */
function forbidImports(files, ...restrictions) {
  return {
    files,
    rules: {
      'no-restricted-imports': ['error', { patterns: restrictions.map(({ regex, message }) => ({ regex, message })) }],
      'no-restricted-syntax': ['error', ...restrictions.map(({ regex, message }) => ({ selector: `ImportExpression[source.value=/${regex}/]`, message }))],
    },
  };
}

const LAMBDA_ALONE = upInto(['lib', 'devkit', 'scripts', 'test', 'bench'], 'Lambda code is bundled and deployed alone: it imports only lambda/ and its packages.');
/** House style: domain code imports nothing of AWS or middy. */
const CORE_WITHOUT_AWS = {
  regex: '^((@aws-sdk|@smithy|@aws-lambda-powertools|@middy)(\\x2F|$)|aws-lambda$)',
  message: 'The ingest core holds no AWS and no middy: it declares ports (core/<concern>/ports.ts) that lambda/ingest/adapters/ implement and compose.ts wires.',
};

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
  forbidImports(['lambda/**'], LAMBDA_ALONE),
  forbidImports(
    ['lambda/ingest/core/**'],
    LAMBDA_ALONE,
    CORE_WITHOUT_AWS,
    upInto(['adapters'], 'The ingest core knows its ports only: adapters depend on the core, never the reverse (compose.ts wires them).'),
  ),
  forbidImports(['bench/**'], upInto(['test'], 'The bench measures with the development kit (devkit/), never with the tests.')),
  forbidImports(['devkit/**'], upInto(['test', 'bench'], 'The development kit serves scripts, bench and tests; it depends on neither of the last two.')),
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly', __dirname: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
