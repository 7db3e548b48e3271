import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbTenancyStore } from '../lambda/tenancy-store/dynamodb-tenancy-store.js';
import { INGEST_ROUTE } from '../lambda/shared/service-constants.js';
import { createApiKey, createOrganization } from '../scripts/admin/commands.js';
import { LOCAL_DIR_ENV, type LocalEndpoints, type LocalPaths, localPaths } from '../devkit/local-stack/local-state.js';
import { startStackChild } from '../devkit/local-stack/stack-child.js';
import { localClientConfig } from '../devkit/engines/provision.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The organization {@link startStackProcess} creates, whose quotas never bind. */
export const BENCH_ORG_ID = 'bench';

export interface StackProcess {
  /** The ingest route's URL. */
  url: string;
  apiKey: string;
  /** How the stack runs, for a row's note. */
  description: string;
  /** Its state directory (TRACE_INGEST_LOCAL_DIR), where `npm run compact` and `npm run query` find it. */
  paths: LocalPaths;
  /** Its `endpoints.json`: the API's base URL, the engines, the bucket and the stream. */
  endpoints: LocalEndpoints;
}

/**
 * `npm start`'s stack (scripts/local/start.ts) in a process of its own on a free port, as a service is to its
 * clients (in this process the SDK's gzip and JSON would share the server's event loop and thread pool), with its
 * state under `work` and an organization whose quotas never bind.
 */
export async function startStackProcess(work: string, defer: (cleanup: () => unknown) => void): Promise<StackProcess> {
  const paths = localPaths(path.join(work, 'state'));
  const { child, endpoints } = await startStackChild({
    root,
    command: [path.join(root, 'node_modules', '.bin', 'tsx'), 'scripts/local/start.ts'],
    env: { ...process.env, [LOCAL_DIR_ENV]: paths.root, PORT: '0', KEY_CACHE_SECONDS: '30', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    timeoutMs: 120_000,
  });
  defer(() => child.exitCode === null && child.kill('SIGTERM'));
  const dynamodb = new DynamoDBClient(localClientConfig(endpoints.dynamodb));
  defer(() => dynamodb.destroy());
  const admin = { store: new DynamoDbTenancyStore(dynamodb, endpoints.tables.tenancy), now: () => new Date() };
  const quota = 1_000_000_000;
  await createOrganization(admin, BENCH_ORG_ID, { overrides: { minute: quota, hour: quota, day: quota, month: quota } });
  const key = await createApiKey(admin, BENCH_ORG_ID, { name: 'bench' });
  return {
    url: `${endpoints.api}${INGEST_ROUTE.path}`,
    apiKey: key.api_key,
    description: `the local stack as npm start runs it, in its own process (state in a temporary directory, quotas that never bind, KEY_CACHE_SECONDS=30 as deployed)`,
    paths,
    endpoints,
  };
}
