/**
 * `npm run smoke -- --stack <name> [--region <region>]` after a first deploy, or `npm run smoke -- --local`
 * against a running `npm start`: the assumptions no local test can prove, tried against the stack, each
 * reported PASS or FAIL. Exit status 1 when any check failed.
 */
import { parseCommandLine, reportFailure, UsageError } from '../cli/command-line.js';
import { localLandedData } from '../local/query.js';
import { readLocalEndpoints } from '../../devkit/local-stack/local-state.js';
import { runSmoke, smokeReport } from './smoke-checks.js';
import { deployedSmokeTarget, localSmokeTarget, type PreparedTarget } from './smoke-targets.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const SMOKE_USAGE = `usage: npm run smoke -- --stack <name> [--region <region>]
       npm run smoke -- --local

Checks a deployed stack (or the running local stack) end to end, and says plainly what passed: a plain,
a gzip and an OTLP batch are accepted; a body exactly at the 4 MiB ceiling is accepted and one a byte
over it is refused 413 batch_too_large; a 5 MiB body Lambda cannot take is refused without Retry-After;
the rows land; one query over the traces view (Athena, or DuckDB
locally) finds them. Creates an organization smoke-<date>-<id> for the run and revokes its key after.

  --stack <name>   the deployed stack (credentials from the usual AWS chain)
  --region <name>  its region (default: AWS_REGION)
  --local          the stack npm start runs
`;

async function main(): Promise<void> {
  const parsed = parseCommandLine(process.argv.slice(2), { stack: { type: 'string' }, region: { type: 'string' }, local: { type: 'boolean', default: false } }, SMOKE_USAGE);
  if (!parsed) return;
  const { values } = parsed;
  if (values.local === (values.stack !== undefined)) throw new UsageError('give either --stack <name> or --local');
  let prepared: PreparedTarget;
  if (values.local) {
    const endpoints = readLocalEndpoints();
    prepared = await localSmokeTarget({ apiUrl: endpoints.api, dynamodb: endpoints.dynamodb, tenancyTable: endpoints.tables.tenancy, landed: localLandedData() });
  } else {
    const region = values.region ?? process.env.AWS_REGION;
    if (!region) throw new UsageError('no region: pass --region or set AWS_REGION');
    prepared = await deployedSmokeTarget(values.stack as string, region);
  }
  try {
    process.stdout.write(`smoke run as organization ${prepared.target.orgId} against ${prepared.target.apiUrl}\n`);
    const checks = await runSmoke(prepared.target, { log: (check) => process.stdout.write(`${check.passed ? 'PASS' : 'FAIL'}  ${check.name}\n`) });
    process.stdout.write(`\n${smokeReport(checks)}\n`);
    if (checks.some((check) => !check.passed)) process.exitCode = 1;
  } finally {
    await prepared.close();
  }
}

main().catch((error: unknown) => reportFailure('smoke', SMOKE_USAGE, error));
