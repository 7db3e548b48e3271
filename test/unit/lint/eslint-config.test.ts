import { execFileSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');
const IMPORT_RULES = new Set(['no-restricted-imports', 'no-restricted-syntax']);

/**
 * The import rules' verdicts (line numbers) on source texts linted as if they were files at the given paths, with the
 * repository's own eslint.config.js, in one ESLint process (its config is ESM, which Jest's CommonJS cannot load).
 */
function importViolations(files: Record<string, string>): Record<string, number[]> {
  const script = `import { ESLint } from 'eslint';
const eslint = new ESLint({ cwd: ${JSON.stringify(ROOT)} });
const verdicts = {};
for (const [filePath, text] of Object.entries(JSON.parse(process.argv[1]))) {
  const [result] = await eslint.lintText(text, { filePath });
  verdicts[filePath] = result.messages.filter((m) => ${JSON.stringify([...IMPORT_RULES])}.includes(m.ruleId)).map((m) => m.line);
}
console.log(JSON.stringify(verdicts));`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(files)], { cwd: ROOT, encoding: 'utf8' })) as Record<string, number[]>;
}

const AWS_AND_MIDDY = [
  "import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';",
  "import type { Context } from 'aws-lambda';",
  "import middy from '@middy/core';",
  "import type { Provider } from '@smithy/types';",
  "import { Logger } from '@aws-lambda-powertools/logger';",
  "export { S3Client } from '@aws-sdk/client-s3';",
  "export const lazy = () => import('@aws-sdk/client-kinesis');",
  "import { DEFAULT_ENTRIES } from '../../../../lib/trace-ingest-stack.js';",
  "import type { KinesisTraceSink } from '../../adapters/publish/kinesis-trace-sink.js';",
  'export const used: unknown[] = [TransactionCanceledException, middy, Logger, DEFAULT_ENTRIES] as unknown as Context[] & Provider<string>[] & KinesisTraceSink[];',
].join('\n');

const PLAIN = [
  "import { createHash } from 'node:crypto';",
  "import Ajv from 'ajv';",
  "import type { RateLimiter } from './ports.js';",
  "import { DependencyUnavailableError } from '../../../shared/domain/errors.js';",
  'export const used: unknown[] = [createHash, Ajv, DependencyUnavailableError] as unknown as RateLimiter[];',
].join('\n');

describe('eslint.config.js: what the ingest core may import', () => {
  let verdicts: Record<string, number[]>;
  beforeAll(() => {
    verdicts = importViolations({
      'lambda/ingest/core/rate/fixture-core.ts': AWS_AND_MIDDY,
      'lambda/ingest/adapters/rate/fixture-adapter.ts': AWS_AND_MIDDY,
      'lambda/ingest/core/rate/fixture-plain.ts': PLAIN,
    });
  });

  it('refuses in lambda/ingest/core/ every AWS and middy package (static, type-only, re-exported or dynamic), lib/, and the adapters', () => {
    expect(verdicts['lambda/ingest/core/rate/fixture-core.ts']).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('lets an adapter outside the core import AWS and other adapters, and still refuses it lib/', () => {
    expect(verdicts['lambda/ingest/adapters/rate/fixture-adapter.ts']).toEqual([8]);
  });

  it('lets the core import Node, its other packages, its ports and lambda/shared/', () => {
    expect(verdicts['lambda/ingest/core/rate/fixture-plain.ts']).toEqual([]);
  });
});
