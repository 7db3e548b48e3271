import { readFileSync } from 'node:fs';
import path from 'node:path';
import { App, type CfnElement, type Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { DEFAULT_CONFIG } from '../../lib/config.js';
import { TraceIngestStack } from '../../lib/trace-ingest-stack.js';

/** The five functions of the stack, by the role they play. */
export type FunctionRole = 'ingest' | 'landing' | 'planner' | 'worker' | 'sweeper';

/** The resources a function's environment names, by the role they play. */
export type ResourceRole = 'tenancyTable' | 'rateTable' | 'stream' | 'bucket' | 'compactionQueue';

/** One function as the synthesized template deploys it. */
export interface DeployedFunction {
  readonly role: FunctionRole;
  readonly logicalId: string;
  /** `file.export`, as Lambda reads it (`index.handler`). */
  readonly handler: string;
  readonly runtime: string;
  /** The bundle directory `cdk deploy` zips and uploads. */
  readonly assetDir: string;
  /** `Environment.Variables` as in the template: strings, or `{ Ref }` to a resource. */
  readonly environment: Readonly<Record<string, unknown>>;
  readonly timeoutSeconds: number;
  readonly memorySize: number;
  /** Logical id of the execution role. */
  readonly roleLogicalId: string;
}

export interface CloudAssembly {
  readonly outdir: string;
  readonly stackName: string;
  /** The synthesized CloudFormation template, as `cdk deploy` sends it. */
  readonly template: TemplateJson;
  readonly functions: Readonly<Record<FunctionRole, DeployedFunction>>;
  /** Logical id of each resource a function's environment may name. */
  readonly resources: Readonly<Record<ResourceRole, string>>;
}

export interface TemplateJson {
  Resources: Record<string, { Type: string; Properties?: Record<string, unknown>; Metadata?: Record<string, unknown> }>;
}

/** The feature flags `cdk synth` uses (cdk.json's context), so the assembly is the one that deploys. */
function cdkJsonContext(projectRoot: string): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(path.join(projectRoot, 'cdk.json'), 'utf8')) as { context?: Record<string, unknown> };
  return cdkJson.context ?? {};
}

const logicalIdOf = (stack: Stack, construct: IConstruct) => stack.getLogicalId(construct.node.defaultChild as CfnElement);

/** The account and region the assembly is synthesized for; the template names them in ARNs and URLs. */
export const ASSEMBLY_ENV = { account: '123456789012', region: 'us-east-1' };

/**
 * Synthesizes the app with the default configuration into `outdir`, bundling every function with
 * esbuild as `cdk deploy` does (offline, no Docker), and reads back what it deploys. Slow (esbuild
 * for five bundles): do it once per test run or per `npm start -- --bundled`.
 */
export function synthesizeAssembly(projectRoot: string, outdir: string, stackName = 'TraceIngest'): CloudAssembly {
  const app = new App({ outdir, context: cdkJsonContext(projectRoot) });
  const stack = new TraceIngestStack(app, stackName, {
    env: ASSEMBLY_ENV,
    config: DEFAULT_CONFIG,
    projectRoot,
  });
  const assembly = app.synth();
  const template = JSON.parse(readFileSync(path.join(assembly.directory, stack.templateFile), 'utf8')) as TemplateJson;
  const constructs: Record<FunctionRole, IConstruct> = {
    ingest: stack.ingest.handler,
    landing: stack.landing.consumer,
    planner: stack.compaction.planner,
    worker: stack.compaction.worker,
    sweeper: stack.retention.sweeper,
  };
  const functions = Object.fromEntries(
    Object.entries(constructs).map(([role, construct]) => [role, deployedFunction(role as FunctionRole, logicalIdOf(stack, construct), template, assembly.directory)]),
  ) as Record<FunctionRole, DeployedFunction>;
  return {
    outdir: assembly.directory,
    stackName,
    template,
    functions,
    resources: {
      tenancyTable: logicalIdOf(stack, stack.tables.tenancyTable),
      rateTable: logicalIdOf(stack, stack.tables.rateTable),
      stream: logicalIdOf(stack, stack.traceStream.stream),
      bucket: logicalIdOf(stack, stack.landing.bucket),
      compactionQueue: logicalIdOf(stack, stack.compaction.queue),
    },
  };
}

function deployedFunction(role: FunctionRole, logicalId: string, template: TemplateJson, outdir: string): DeployedFunction {
  const resource = template.Resources[logicalId];
  if (resource?.Type !== 'AWS::Lambda::Function') throw new Error(`${logicalId} is not a Lambda function in the template`);
  const properties = resource.Properties as {
    Handler: string;
    Runtime: string;
    Code: { S3Key: unknown };
    Environment?: { Variables?: Record<string, unknown> };
    Timeout?: number;
    MemorySize?: number;
    Role: { 'Fn::GetAtt': [string, string] };
  };
  // The asset's S3 key is `<hash>.zip`; cdk synth leaves the directory it zips as `asset.<hash>`.
  const key = String(properties.Code.S3Key);
  const hash = /^([0-9a-f]{64})\.zip$/.exec(key)?.[1];
  if (hash === undefined) throw new Error(`${logicalId}: unexpected code asset key ${key}`);
  return {
    role,
    logicalId,
    handler: properties.Handler,
    runtime: properties.Runtime,
    assetDir: path.join(outdir, `asset.${hash}`),
    environment: properties.Environment?.Variables ?? {},
    timeoutSeconds: properties.Timeout ?? 3,
    memorySize: properties.MemorySize ?? 128,
    roleLogicalId: properties.Role['Fn::GetAtt'][0],
  };
}

/**
 * A function's environment with each `{ Ref }` replaced by the local name of the resource it names,
 * as CloudFormation replaces it with the physical name. Anything else the template might hold there
 * (`Fn::GetAtt`, `Fn::Join`) is refused, so a new kind of value cannot slip through unresolved.
 */
export function resolveEnvironment(fn: DeployedFunction, assembly: CloudAssembly, names: Readonly<Record<ResourceRole, string>>): Record<string, string> {
  const roleOf = new Map(Object.entries(assembly.resources).map(([role, logicalId]) => [logicalId, role as ResourceRole]));
  return Object.fromEntries(
    Object.entries(fn.environment).map(([name, value]) => {
      if (typeof value === 'string') return [name, value];
      const ref = (value as { Ref?: unknown }).Ref;
      const role = typeof ref === 'string' ? roleOf.get(ref) : undefined;
      if (role === undefined) throw new Error(`${fn.logicalId}: environment variable ${name} is ${JSON.stringify(value)}, which the local stack cannot resolve`);
      return [name, names[role]];
    }),
  );
}
