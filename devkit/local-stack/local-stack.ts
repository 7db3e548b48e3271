import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { S3Client } from '@aws-sdk/client-s3';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context, KinesisStreamEvent } from 'aws-lambda';
import { composeIngest, ingestConfigFromEnv } from '../../lambda/ingest/compose.js';
import { composeLanding, landingConfigFromEnv } from '../../lambda/landing/compose.js';
import { DynamoDbTenancyStore } from '../../lambda/tenancy-store/dynamodb-tenancy-store.js';
import { ENV } from '../../lambda/shared/runtime/env-names.js';
import { FUNCTION_TIMEOUT_SECONDS } from '../../lambda/shared/service-constants.js';
import { type AdminDeps, createApiKey, createOrganization, createWorkspace } from '../../scripts/admin/commands.js';
import { type Engine, startDynamoDbLocal, startKinesalite, startS3rver } from '../engines/engines.js';
import { injectKinesisLatency } from '../engines/kinesis-latency.js';
import { type BundledFunctions, startBundledFunctions } from './bundled-functions.js';
import { type HttpGateway, startHttpGateway } from './http-gateway.js';
import { lambdaContext } from '../lambda/lambda-context.js';
import { bundledCompaction, startCompactionTimer } from './local-compaction.js';
import {
  isProcessAlive,
  LOCAL_NAMES,
  type LocalEndpoints,
  type LocalPaths,
  readJsonFile,
  removeFile,
  writeJsonFile,
  writeTextFile,
} from './local-state.js';
import { demoEnvFile } from './demo-env.js';
import { createBucket, createStream, createTables, LOCAL_CREDENTIALS, LOCAL_REGION, localClientConfig } from '../engines/provision.js';
import { type CheckpointStore, type PollerSettings, type StreamPoller, startStreamPoller } from '../engines/stream-poller.js';

/** The demo tenant seeded on the first start; its secrets are kept in `demo-keys.json` to be shown again. */
export interface DemoTenant {
  orgId: string;
  workspaceSlug: string;
  orgKey: { keyId: string; apiKey: string };
  workspaceKey: { keyId: string; apiKey: string };
}

export const DEMO_ORG_ID = 'demo';
export const DEMO_WORKSPACE = 'default';

export interface LocalStackOptions {
  paths: LocalPaths;
  /** HTTP port of the API; 0 picks a free one. */
  port: number;
  /** Ports of the engines; each absent or 0 picks a free one. */
  enginePorts?: { dynamodb?: number; kinesis?: number; s3?: number };
  host?: string;
  /** Deletes the state directory first. */
  reset?: boolean;
  poller?: Partial<PollerSettings>;
  /** Interval of the compaction timer; 0 turns it off (tests that compact explicitly). */
  compactionIntervalMs?: number;
  /**
   * Run the bundles `cdk deploy` ships (synthesized into `paths.root/cdk.out`), each in its own Node 24
   * process with the template's environment, instead of the handlers composed in this process.
   */
  bundled?: { projectRoot: string };
  log?: (line: string) => void;
  /**
   * A delay (ms) held on every answer the in-process ingest handler's Kinesis client gets (`injectKinesisLatency`):
   * Kinesis made slow without loading the host. Not with `bundled`.
   */
  kinesisLatencyMs?: () => number;
}

export interface LocalStack {
  endpoints: LocalEndpoints;
  /** The demo tenant, or undefined when it exists but `demo-keys.json` was deleted. */
  demo: DemoTenant | undefined;
  /** True when this start created the demo tenant. */
  demoCreated: boolean;
  stop(): Promise<void>;
}

export class LocalStackAlreadyRunningError extends Error {
  override name = 'LocalStackAlreadyRunningError';
}

type ProxyLambda = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
type KinesisLambda = (event: KinesisStreamEvent, context: Context) => Promise<unknown>;


/** The environment the deployed functions get, pointed at the local engines. */
export function handlerEnvironment(endpoints: Omit<LocalEndpoints, 'api' | 'pid' | 's3Directory'>, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return {
    [ENV.tenancyTable]: endpoints.tables.tenancy,
    [ENV.rateTable]: endpoints.tables.rate,
    [ENV.traceStream]: endpoints.stream,
    [ENV.dataBucket]: endpoints.bucket,
    [ENV.s3ForcePathStyle]: 'true',
    // Admin changes (revoked keys, billing, quotas) take effect at once locally; deployed, the cache holds them 30 s.
    [ENV.keyCacheSeconds]: env[ENV.keyCacheSeconds] ?? '0',
    AWS_REGION: endpoints.region,
    AWS_DEFAULT_REGION: endpoints.region,
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
    AWS_ENDPOINT_URL_KINESIS: endpoints.kinesis,
    AWS_ENDPOINT_URL_S3: endpoints.s3,
    POWERTOOLS_LOG_LEVEL: env.POWERTOOLS_LOG_LEVEL ?? 'WARN',
    POWERTOOLS_METRICS_DISABLED: env.POWERTOOLS_METRICS_DISABLED ?? 'true',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
}

function fileCheckpoints(file: string): CheckpointStore {
  const positions = readJsonFile<Record<string, string>>(file) ?? {};
  return {
    get: (shardId) => positions[shardId],
    set: (shardId, sequenceNumber) => {
      positions[shardId] = sequenceNumber;
      writeJsonFile(file, positions);
    },
  };
}

async function seedDemoTenant(deps: AdminDeps, paths: LocalPaths): Promise<{ demo: DemoTenant | undefined; created: boolean }> {
  if (await deps.store.getOrganization(DEMO_ORG_ID)) {
    return { demo: readJsonFile<DemoTenant>(paths.demoKeys), created: false };
  }
  await createOrganization(deps, DEMO_ORG_ID);
  await createWorkspace(deps, DEMO_ORG_ID, DEMO_WORKSPACE);
  const orgKey = await createApiKey(deps, DEMO_ORG_ID, { name: 'demo organization key' });
  const workspaceKey = await createApiKey(deps, DEMO_ORG_ID, { workspaceSlug: DEMO_WORKSPACE, name: 'demo workspace key' });
  const demo: DemoTenant = {
    orgId: DEMO_ORG_ID,
    workspaceSlug: DEMO_WORKSPACE,
    orgKey: { keyId: orgKey.key_id, apiKey: orgKey.api_key },
    workspaceKey: { keyId: workspaceKey.key_id, apiKey: workspaceKey.api_key },
  };
  writeJsonFile(paths.demoKeys, demo, 0o600);
  return { demo, created: true };
}

/**
 * Starts the whole pipeline on this machine: engines with their state under `paths.root`, the
 * tables, stream and bucket, the demo tenant, the ingest handler behind an HTTP server and the
 * landing handler on the stream. Sets the handlers' environment on `process.env`.
 */
export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const { paths } = options;
  const log = options.log ?? (() => undefined);
  const running = readJsonFile<LocalEndpoints>(paths.endpoints);
  if (running && running.pid !== process.pid && isProcessAlive(running.pid)) {
    throw new LocalStackAlreadyRunningError(`a local stack already runs on ${paths.root} (pid ${running.pid}, API ${running.api})`);
  }
  if (options.reset) rmSync(paths.root, { recursive: true, force: true });
  mkdirSync(paths.root, { recursive: true });

  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) {
      await stop().catch((error: unknown) => log(`stop failed: ${(error as Error).message}`));
    }
    removeFile(paths.endpoints);
    removeFile(paths.demoEnv);
  };

  try {
    const began = performance.now();
    // Each engine reports when it answers, so the seconds a JVM takes to start are not silent.
    const announce = (name: string) => (engine: Engine) => {
      log(`${name} answers on ${engine.endpoint} (${((performance.now() - began) / 1000).toFixed(1)} s)`);
      return engine;
    };
    const started = await Promise.allSettled([
      startDynamoDbLocal({ dataDir: paths.dynamodb, port: options.enginePorts?.dynamodb ?? 0 }).then(announce('DynamoDB Local')),
      startKinesalite({ dataDir: paths.kinesis, port: options.enginePorts?.kinesis ?? 0 }).then(announce('kinesalite')),
      startS3rver({ dataDir: paths.s3, port: options.enginePorts?.s3 ?? 0 }).then(announce('s3rver')),
    ]);
    for (const result of started) if (result.status === 'fulfilled') stops.push(() => result.value.stop());
    const failed = started.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failed) throw failed.reason;
    const [dynamo, kinesis, s3] = started.map((result) => (result as PromiseFulfilledResult<Engine>).value) as [Engine, Engine, Engine];
    log('creating the tables, the stream and the bucket (first start) or finding them');

    const dynamodb = new DynamoDBClient(localClientConfig(dynamo.endpoint));
    const kinesisClient = new KinesisClient(localClientConfig(kinesis.endpoint));
    const s3Client = new S3Client(localClientConfig(s3.endpoint));
    stops.push(async () => {
      dynamodb.destroy();
      kinesisClient.destroy();
      s3Client.destroy();
    });
    await createTables(dynamodb, LOCAL_NAMES.tables);
    await createStream(kinesisClient, LOCAL_NAMES.stream, LOCAL_NAMES.streamShards);
    await createBucket(s3Client, LOCAL_NAMES.bucket);

    const adminDeps: AdminDeps = { store: new DynamoDbTenancyStore(dynamodb, LOCAL_NAMES.tables.tenancy), now: () => new Date() };
    const { demo, created } = await seedDemoTenant(adminDeps, paths);

    const base = {
      region: LOCAL_REGION,
      dynamodb: dynamo.endpoint,
      kinesis: kinesis.endpoint,
      s3: s3.endpoint,
      bucket: LOCAL_NAMES.bucket,
      tables: { ...LOCAL_NAMES.tables },
      stream: LOCAL_NAMES.stream,
    };
    // Composed as the deployed handlers are, from the environment they would get (the AWS SDK reads
    // the endpoints and credentials from process.env), or run from the deployed bundles themselves.
    Object.assign(process.env, handlerEnvironment(base));
    let ingest: ProxyLambda;
    let landing: KinesisLambda;
    let bundled: BundledFunctions | undefined;
    if (options.bundled) {
      log(`running the five bundles cdk deploy ships, synthesized into ${path.join(paths.root, 'cdk.out')}`);
      const quiet = handlerEnvironment(base);
      bundled = await startBundledFunctions({
        // The log level and metrics of plain npm start, not the template's INFO lines and EMF records on every request.
        overrides: { POWERTOOLS_LOG_LEVEL: quiet.POWERTOOLS_LOG_LEVEL!, POWERTOOLS_METRICS_DISABLED: quiet.POWERTOOLS_METRICS_DISABLED! },
        projectRoot: options.bundled.projectRoot,
        outdir: path.join(paths.root, 'cdk.out'),
        region: LOCAL_REGION,
        names: { tenancyTable: LOCAL_NAMES.tables.tenancy, rateTable: LOCAL_NAMES.tables.rate, stream: LOCAL_NAMES.stream, bucket: LOCAL_NAMES.bucket },
        endpoints: { dynamodb: dynamo.endpoint, kinesis: kinesis.endpoint, s3: s3.endpoint },
        log,
      });
      const { functions, stop } = bundled;
      stops.push(stop);
      ingest = (event) => functions.ingest.invoke<APIGatewayProxyResult>(event);
      landing = (event) => functions.landing.invoke(event);
    } else {
      const ingestConfig = ingestConfigFromEnv();
      if (options.kinesisLatencyMs && ingestConfig.clients?.kinesis) injectKinesisLatency(ingestConfig.clients.kinesis, options.kinesisLatencyMs);
      ingest = composeIngest(ingestConfig) as unknown as ProxyLambda;
      landing = composeLanding(landingConfigFromEnv()) as unknown as KinesisLambda;
    }

    const gateway: HttpGateway = await startHttpGateway({
      port: options.port,
      ...(options.host ? { host: options.host } : {}),
      handler: (event) => ingest(event, lambdaContext({ functionName: 'trace-ingest-local', timeoutMs: FUNCTION_TIMEOUT_SECONDS.ingest * 1000, region: LOCAL_REGION })),
      onError: (error) => log(`ingest handler threw (API Gateway would answer 502): ${(error as Error).stack ?? String(error)}`),
    });
    stops.push(() => gateway.stop());

    const poller: StreamPoller = await startStreamPoller({
      kinesis: kinesisClient,
      streamName: LOCAL_NAMES.stream,
      region: LOCAL_REGION,
      handler: (event) => landing(event, lambdaContext({ functionName: 'trace-landing-local', timeoutMs: FUNCTION_TIMEOUT_SECONDS.landing * 1000, region: LOCAL_REGION })),
      checkpoints: fileCheckpoints(paths.checkpoints),
      ...(options.poller ? { settings: options.poller } : {}),
      onRetry: ({ shardId, records, attempt, error }) =>
        log(`landing failed on ${shardId} (${records} records, attempt ${attempt}), retrying: ${(error as Error).message}`),
      onDiscard: ({ shardId, firstSequenceNumber, lastSequenceNumber, error }) =>
        log(
          `landing gave up on ${shardId} ${firstSequenceNumber}..${lastSequenceNumber} after its retries: ${(error as Error).message}; ` +
            `once the cause is fixed, replay it with: npm run replay -- --local --shard ${shardId} --from ${firstSequenceNumber} --to ${lastSequenceNumber}`,
        ),
      onPollError: ({ shardId, error }) => log(`reading ${shardId} failed, retrying: ${(error as Error).message}`),
    });
    // Stopped before the engines, so no poll runs against a closed kinesalite.
    stops.push(() => poller.stop());
    // Closed hours are compacted as the deployed schedule does; `npm run compact` does every pending hour now.
    if (options.compactionIntervalMs !== 0) {
      const compaction = startCompactionTimer({
        endpoints: base,
        paths,
        log,
        ...(options.compactionIntervalMs ? { intervalMs: options.compactionIntervalMs } : {}),
        ...(bundled ? { compactOnce: bundledCompaction(bundled, paths) } : {}),
      });
      stops.push(() => compaction.stop());
    }

    const endpoints: LocalEndpoints = { api: gateway.url, ...base, s3Directory: paths.s3, pid: process.pid };
    writeJsonFile(paths.endpoints, endpoints);
    // Mode 0600: it holds the demo key, as demo-keys.json does.
    writeTextFile(paths.demoEnv, demoEnvFile(paths.demoEnv, endpoints.api, demo?.orgKey.apiKey), 0o600);
    let stopping: Promise<void> | undefined;
    return { endpoints, demo, demoCreated: created, stop: () => (stopping ??= stopAll()) };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
