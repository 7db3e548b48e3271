import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbTenancyStore } from '../../lambda/tenancy-store/dynamodb-tenancy-store.js';
import { DynamoDbWindowUsage } from '../../lambda/ingest/adapters/rate/dynamodb-window-usage.js';
import { missingAwsSetup } from '../cli/command-line.js';
import { parseAdminArgs, runAdminCommand, USAGE, usageFor } from './run-command.js';
import { resolveTarget } from './target.js';
import { S3Client } from '@aws-sdk/client-s3';
import { S3CompactionStore } from '../../lambda/compaction/s3-compaction-store.js';
import { type ErasureSecret, StoredErasures } from '../../lambda/compaction/erasure/stored-erasures.js';

const NO_SECRET: ErasureSecret = {
  get: () => Promise.reject(new Error('the admin CLI holds no erasure secret')),
};

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

function oneLine(error: unknown): string {
  const setup = missingAwsSetup(error);
  if (setup) return setup;
  const message = error instanceof Error ? error.message : String(error);
  const name = error instanceof Error ? error.name : 'Error';
  const text = name === 'AdminCommandError' || name.startsWith('Tenancy') || name === 'LocalStackNotRunningError' ? message : `${name}: ${message}`;
  return text.replace(/\s+/g, ' ').trim();
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${usageFor(argv.filter((arg) => !arg.startsWith('-')))}\n`);
    return 0;
  }
  if (argv.length === 0) {
    process.stderr.write(`${USAGE}\n`);
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
      erasures: new StoredErasures(new S3CompactionStore(s3, target.dataBucket), NO_SECRET),
      now: () => new Date(),
      ...(target.retentionCeilingDays === undefined ? {} : { retentionCeilingDays: target.retentionCeilingDays }),
    };
    const result = await runAdminCommand(deps, parsed);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } finally {
    dynamodb.destroy();
    s3.destroy();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`admin: ${oneLine(error)}\n`);
    process.exitCode = 1;
  },
);
