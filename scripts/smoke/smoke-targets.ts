import { randomUUID } from 'node:crypto';
import { AthenaClient, GetQueryExecutionCommand, GetQueryResultsCommand, StartQueryExecutionCommand } from '@aws-sdk/client-athena';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbTenancyStore } from '../../lambda/tenancy-store/dynamodb-tenancy-store.js';
import { type AdminDeps, createApiKey, createOrganization, revokeApiKey } from '../admin/commands.js';
import { type LandedData, queryLanded } from '../local/query.js';
import { localClientConfig } from '../../devkit/engines/provision.js';
import type { SmokeTarget } from './smoke-checks.js';

/** A smoke target and what to undo after the run (the smoke key is revoked). */
export interface PreparedTarget {
  target: SmokeTarget;
  close(): Promise<void>;
}

/** A fresh organization and key for one smoke run, so its rows are its own. */
async function smokeTenant(deps: AdminDeps): Promise<{ orgId: string; apiKey: string; keyId: string }> {
  const orgId = `smoke-${new Date().toISOString().slice(0, 10)}-${randomUUID().slice(0, 8)}`;
  await createOrganization(deps, orgId);
  const key = await createApiKey(deps, orgId, { name: 'smoke test' });
  return { orgId, apiKey: key.api_key, keyId: key.key_id };
}

const like = (orgId: string, runId: string) => `org_id = '${orgId}' AND root_span_name LIKE 'smoke-${runId}-%'`;

/** The target of one run: the tenant's key, and a count over the raw table and over the view by the engine given. */
function smokeTarget(
  tenant: { orgId: string; apiKey: string },
  apiUrl: string,
  queryEngine: string,
  count: (table: 'traces_raw' | 'traces', runId: string) => Promise<number>,
): SmokeTarget {
  return {
    apiUrl: apiUrl.replace(/\/$/, ''),
    apiKey: tenant.apiKey,
    orgId: tenant.orgId,
    queryEngine,
    landedTraces: (runId) => count('traces_raw', runId),
    queryTracesView: (runId) => count('traces', runId),
  };
}

/** The local stack, as `npm start` runs it (or as a test starts it): DuckDB reads the landed Parquet in Athena's place. */
export async function localSmokeTarget(options: { apiUrl: string; dynamodb: string; tenancyTable: string; landed: LandedData }): Promise<PreparedTarget> {
  const dynamodb = new DynamoDBClient(localClientConfig(options.dynamodb));
  const deps: AdminDeps = { store: new DynamoDbTenancyStore(dynamodb, options.tenancyTable), now: () => new Date() };
  const tenant = await smokeTenant(deps);
  const count = async (table: string, runId: string) => {
    const [result] = await queryLanded(`SELECT count(*)::INTEGER AS n FROM ${table} WHERE ${like(tenant.orgId, runId)}`, options.landed);
    return Number(result?.rows[0]?.n ?? 0);
  };
  return {
    target: smokeTarget(tenant, options.apiUrl, 'DuckDB (in Athena\'s place)', count),
    async close() {
      await revokeApiKey(deps, tenant.keyId);
      dynamodb.destroy();
    },
  };
}

/** Runs one Athena query in the stack's workgroup and returns the first column of the first row. */
async function athenaScalar(athena: AthenaClient, workGroup: string, database: string, sql: string): Promise<string | undefined> {
  const { QueryExecutionId } = await athena.send(new StartQueryExecutionCommand({ QueryString: sql, WorkGroup: workGroup, QueryExecutionContext: { Database: database } }));
  for (;;) {
    const { QueryExecution } = await athena.send(new GetQueryExecutionCommand({ QueryExecutionId }));
    const state = QueryExecution?.Status?.State;
    if (state === 'SUCCEEDED') break;
    if (state === 'FAILED' || state === 'CANCELLED') throw new Error(`Athena query ${state}: ${QueryExecution?.Status?.StateChangeReason ?? ''}`);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  const { ResultSet } = await athena.send(new GetQueryResultsCommand({ QueryExecutionId }));
  return ResultSet?.Rows?.[1]?.Data?.[0]?.VarCharValue;
}

/** A deployed stack, found by its CloudFormation outputs; credentials and region from the usual AWS chain. */
export async function deployedSmokeTarget(stackName: string, region: string): Promise<PreparedTarget> {
  const cloudformation = new CloudFormationClient({ region });
  const { Stacks = [] } = await cloudformation.send(new DescribeStacksCommand({ StackName: stackName })).finally(() => cloudformation.destroy());
  const output = (key: string) => {
    const value = Stacks[0]?.Outputs?.find((candidate) => candidate.OutputKey === key)?.OutputValue;
    if (!value) throw new Error(`stack ${stackName} in ${region} has no output ${key}`);
    return value;
  };
  // Imported only here: the stack module loads the CDK library.
  const { OUTPUTS } = await import('../../lib/trace-ingest-stack.js');
  const dynamodb = new DynamoDBClient({ region });
  const athena = new AthenaClient({ region });
  const deps: AdminDeps = { store: new DynamoDbTenancyStore(dynamodb, output(OUTPUTS.tenancyTableName)), now: () => new Date() };
  const tenant = await smokeTenant(deps);
  const workGroup = output('AthenaWorkGroup');
  const database = output('GlueDatabaseName');
  const today = new Date().toISOString().slice(0, 10);
  const count = async (table: string, runId: string) =>
    Number((await athenaScalar(athena, workGroup, database, `SELECT count(*) FROM ${table} WHERE dt = '${today}' AND ${like(tenant.orgId, runId)}`)) ?? 0);
  return {
    target: smokeTarget(tenant, output(OUTPUTS.apiUrl), 'Athena', count),
    async close() {
      await revokeApiKey(deps, tenant.keyId);
      dynamodb.destroy();
      athena.destroy();
    },
  };
}
