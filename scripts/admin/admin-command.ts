import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { DynamoDbTenancyStore } from '../../lambda/tenancy-store/dynamodb-tenancy-store.js';
import { DynamoDbWindowUsage } from '../../lambda/ingest/adapters/rate/dynamodb-window-usage.js';
import { S3LakeStore } from '../../lambda/lake/s3-lake-store.js';
import { type ErasureSecret, StoredErasures } from '../../lambda/erasure/stored-erasures.js';
import { defineCommand, helpAsked, missingAwsSetup, printUsage } from '../cli/command-line.js';
import { parseAdminArgs, runAdminCommand, USAGE, usageFor } from './run-command.js';
import { resolveTarget } from './target.js';

const NO_SECRET: ErasureSecret = {
  get: () => Promise.reject(new Error('the admin CLI holds no erasure secret')),
};

function oneLine(error: unknown): string {
  const setup = missingAwsSetup(error);
  if (setup) return setup;
  const message = error instanceof Error ? error.message : String(error);
  const name = error instanceof Error ? error.name : 'Error';
  const text = name === 'AdminCommandError' || name.startsWith('Tenancy') || name === 'LocalStackNotRunningError' ? message : `${name}: ${message}`;
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * `npm run admin`: `--help` after any words prints the usage of those words; a command prints its result as JSON.
 * A refused command line is one line and exit status 1, as every other failure.
 */
export const adminCommand = defineCommand({ name: 'admin', usage: USAGE, describe: oneLine }, async (argv, out) => {
  if (helpAsked(argv)) return printUsage(out.stdout, usageFor(argv.filter((arg) => !arg.startsWith('-'))));
  if (argv.length === 0) {
    printUsage(out.stderr, USAGE);
    return 2;
  }
  const parsed = parseAdminArgs(argv);
  const target = await resolveTarget(parsed.target);
  const dynamodb = new DynamoDBClient({ ...target.dynamodb, maxAttempts: 3 });
  const s3 = new S3Client({ ...target.s3, maxAttempts: 3 });
  try {
    const deps = {
      store: new DynamoDbTenancyStore(dynamodb, target.tenancyTable),
      usage: new DynamoDbWindowUsage(dynamodb, target.rateTable, true),
      // The admin CLI only records requests and reads their state: it never needs the erasure secret.
      erasures: new StoredErasures(new S3LakeStore(s3, target.dataBucket), NO_SECRET),
      now: () => new Date(),
      ...(target.retentionCeilingDays === undefined ? {} : { retentionCeilingDays: target.retentionCeilingDays }),
    };
    const result = await runAdminCommand(deps, parsed);
    out.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } finally {
    dynamodb.destroy();
    s3.destroy();
  }
});
