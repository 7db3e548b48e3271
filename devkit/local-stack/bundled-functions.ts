import type { SQSBatchResponse } from 'aws-lambda';
import { type CloudAssembly, type FunctionRole, resolveEnvironment, synthesizeAssembly } from './cloud-assembly.js';
import { type LambdaProcess, startLambdaProcess } from './lambda-process.js';
import { LOCAL_CREDENTIALS } from '../engines/provision.js';
import { type SqsEndpoint, startSqsEndpoint } from '../engines/sqs-endpoint.js';

export interface BundledFunctionsOptions {
  projectRoot: string;
  /** Where the cloud assembly is written (cdk.out). */
  outdir: string;
  region: string;
  names: { tenancyTable: string; rateTable: string; stream: string; bucket: string };
  endpoints: { dynamodb: string; kinesis: string; s3: string };
  /** Variables set over the template's (npm start: the log level and metrics of plain npm start). */
  overrides?: Record<string, string>;
  log?: (line: string) => void;
}

/** The five deployed functions, each running from its bundle as Lambda runs it, and the SQS endpoint between planner (and sweeper) and worker. */
export interface BundledFunctions {
  readonly assembly: CloudAssembly;
  readonly functions: Readonly<Record<FunctionRole, LambdaProcess>>;
  readonly sqs: SqsEndpoint;
  /** One scheduled run: the retention sweeper's, the planner's, then the worker on every hour they queued. */
  compact(): Promise<{ slices: number; batchItemFailures: SQSBatchResponse['batchItemFailures'] }>;
  stop(): Promise<void>;
}

const COMPACTION_QUEUE = 'compaction.fifo';

/**
 * Synthesizes the app (bundling every function with esbuild, as `cdk deploy` does) and starts each
 * bundle in its own Node 24 process with the template's environment, its `Ref`s resolved to the local
 * resources, and the local engines reached through `AWS_ENDPOINT_URL_*` only. Used by
 * `npm start -- --bundled` and test/integration/bundled.test.ts.
 */
export async function startBundledFunctions(options: BundledFunctionsOptions): Promise<BundledFunctions> {
  const log = options.log ?? (() => undefined);
  const began = performance.now();
  const seconds = () => `${((performance.now() - began) / 1000).toFixed(1)} s`;
  log('synthesizing the app: esbuild bundles the four functions as cdk deploy does (15-60 s, longer on a busy machine)');
  const assembly = synthesizeAssembly(options.projectRoot, options.outdir);
  log(`synthesized (${seconds()}); starting each bundle in its own Node 24 process`);
  const sqs = await startSqsEndpoint(options.region);
  const names = { ...options.names, compactionQueue: sqs.queueUrl(COMPACTION_QUEUE) };
  const engines = {
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: options.endpoints.dynamodb,
    AWS_ENDPOINT_URL_KINESIS: options.endpoints.kinesis,
    AWS_ENDPOINT_URL_S3: options.endpoints.s3,
    AWS_ENDPOINT_URL_SQS: sqs.endpoint,
  };
  const started: LambdaProcess[] = [];
  try {
    const functions = {} as Record<FunctionRole, LambdaProcess>;
    for (const fn of Object.values(assembly.functions)) {
      functions[fn.role] = await startLambdaProcess({
        functionName: `${assembly.stackName}-${fn.role}`,
        assetDir: fn.assetDir,
        handler: fn.handler,
        environment: { ...resolveEnvironment(fn, assembly, names), ...options.overrides, ...engines },
        timeoutSeconds: fn.timeoutSeconds,
        memorySize: fn.memorySize,
        region: options.region,
        ...(options.log ? { log: (line: string) => options.log?.(`${fn.role}: ${line}`) } : {}),
      });
      started.push(functions[fn.role]);
      log(`${fn.role} bundle loaded (${seconds()})`);
    }
    return {
      assembly,
      functions,
      sqs,
      async compact() {
        const scheduled = { 'detail-type': 'Scheduled Event', source: 'aws.events', time: new Date().toISOString(), detail: {} };
        // The sweep first, as locally in-process: nothing is compacted that is deleted next.
        await functions.sweeper.invoke(scheduled);
        await functions.planner.invoke({ 'detail-type': 'Scheduled Event', source: 'aws.events', time: new Date().toISOString(), detail: {} });
        const records = sqs.drain();
        if (records.length === 0) return { slices: 0, batchItemFailures: [] };
        const response = await functions.worker.invoke<SQSBatchResponse>({ Records: records });
        return { slices: records.length, batchItemFailures: response.batchItemFailures };
      },
      async stop() {
        await Promise.all(started.map((fn) => fn.stop()));
        await sqs.stop();
      },
    };
  } catch (error) {
    await Promise.all(started.map((fn) => fn.stop()));
    await sqs.stop();
    throw error;
  }
}
