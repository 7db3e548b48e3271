/**
 * `npm run smoke -- --stack <name> [--region <region>]` after a first deploy, or `npm run smoke -- --local`
 * against a running `npm start`: the assumptions no local test can prove, tried against the stack, each
 * reported PASS or FAIL. Exit status 1 when any check failed.
 */
import { defineCommand, parseCommandLine, UsageError } from '../cli/command-line.js';
import { localLandedData } from '../local/query.js';
import { readLocalEndpoints } from '../../devkit/local-stack/local-state.js';
import { runSmoke, smokeReport } from './smoke-checks.js';
import { deployedSmokeTarget, localSmokeTarget, type PreparedTarget } from './smoke-targets.js';

export const SMOKE_USAGE = `usage: npm run smoke -- --stack <name> [--region <region>]
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

/** `npm run smoke`: each check PASS or FAIL as it ends, then the report; exit status 1 when any check failed. */
export const smokeCommand = defineCommand({ name: 'smoke', usage: SMOKE_USAGE }, async (argv, out) => {
  const parsed = parseCommandLine(argv, { stack: { type: 'string' }, region: { type: 'string' }, local: { type: 'boolean', default: false } }, SMOKE_USAGE, out);
  if (!parsed) return 0;
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
    out.stdout.write(`smoke run as organization ${prepared.target.orgId} against ${prepared.target.apiUrl}\n`);
    const checks = await runSmoke(prepared.target, { log: (check) => out.stdout.write(`${check.passed ? 'PASS' : 'FAIL'}  ${check.name}\n`) });
    out.stdout.write(`\n${smokeReport(checks)}\n`);
    return checks.some((check) => !check.passed) ? 1 : 0;
  } finally {
    await prepared.close();
  }
});
