import * as path from 'node:path';
import { RemovalPolicy } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, LoggingFormat, Runtime } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, type NodejsFunctionProps, OutputFormat, SourceMapMode } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

/** The runtime every function of the stack uses; `target` below follows it. */
export const HOUSE_RUNTIME = Runtime.NODEJS_24_X;

/**
 * ESM bundles cannot `require`; some CommonJS dependencies still call it for Node built-ins,
 * so the bundle gets a real `require` bound to its own URL.
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as topLevelCreateRequire } from 'node:module'; const require = topLevelCreateRequire(import.meta.url);";

export interface HouseFunctionProps
  extends Omit<NodejsFunctionProps, 'entry' | 'runtime' | 'architecture' | 'logGroup' | 'role' | 'projectRoot' | 'depsLockFilePath' | 'bundling'> {
  /** Repository root: holds package-lock.json and tsconfig.json. */
  readonly projectRoot: string;
  /** Handler file, relative to `projectRoot`; it exports `handler`. */
  readonly entry: string;
  /** Powertools service name, also the `service` key of every log line and metric. */
  readonly serviceName: string;
  readonly metricsNamespace: string;
  readonly logRetention: RetentionDays;
}

/**
 * A NodejsFunction with the house defaults baked in: Node 24 on arm64, an ESM bundle built locally
 * by esbuild (never Docker) with source maps, its own log group with a retention, a role that can
 * write only to that log group, and Powertools settings. Grants are added by the construct that
 * wires the function to a resource, together with the variable naming it.
 */
export class HouseFunction extends NodejsFunction {
  /** The function's own log group, created with the retention. */
  public readonly functionLogGroup: LogGroup;

  constructor(scope: Construct, id: string, props: HouseFunctionProps) {
    const { projectRoot, entry, serviceName, metricsNamespace, logRetention, environment, ...rest } = props;
    const logGroup = new LogGroup(scope, `${id}Logs`, { retention: logRetention, removalPolicy: RemovalPolicy.DESTROY });
    const role = new Role(scope, `${id}Role`, {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of the ${serviceName} function`,
    });
    super(scope, id, {
      ...rest,
      entry: path.join(projectRoot, entry),
      handler: 'handler',
      projectRoot,
      depsLockFilePath: path.join(projectRoot, 'package-lock.json'),
      runtime: HOUSE_RUNTIME,
      architecture: Architecture.ARM_64,
      logGroup,
      loggingFormat: LoggingFormat.JSON,
      role,
      environment: {
        NODE_OPTIONS: '--enable-source-maps',
        POWERTOOLS_SERVICE_NAME: serviceName,
        POWERTOOLS_METRICS_NAMESPACE: metricsNamespace,
        POWERTOOLS_LOG_LEVEL: 'INFO',
        ...environment,
      },
      bundling: {
        forceDockerBundling: false,
        format: OutputFormat.ESM,
        target: 'node24',
        mainFields: ['module', 'main'],
        banner: ESM_REQUIRE_BANNER,
        bundleAwsSDK: true,
        minify: true,
        keepNames: true,
        sourceMap: true,
        sourceMapMode: SourceMapMode.DEFAULT,
        sourcesContent: false,
        tsconfig: path.join(projectRoot, 'tsconfig.json'),
      },
    });
    this.functionLogGroup = logGroup;
    logGroup.grantWrite(role);
  }
}
