import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbTenancyStore } from '../../lambda/ingest/core/tenancy/dynamodb-tenancy-store.js';
import { DynamoDbWindowUsage } from '../../lambda/ingest/core/rate/dynamodb-window-usage.js';
import { missingAwsSetup } from '../cli/command-line.js';
import { parseAdminArgs, runAdminCommand, USAGE, usageFor } from './run-command.js';
import { resolveTarget } from './target.js';

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
  try {
    const deps = {
      store: new DynamoDbTenancyStore(dynamodb, target.tenancyTable),
      usage: new DynamoDbWindowUsage(dynamodb, target.rateTable, true),
      now: () => new Date(),
      ...(target.retentionCeilingDays === undefined ? {} : { retentionCeilingDays: target.retentionCeilingDays }),
    };
    const result = await runAdminCommand(deps, parsed);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } finally {
    dynamodb.destroy();
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
