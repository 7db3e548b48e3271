import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import type { DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import { stackOutputs } from '../cli/stack.js';
import { type LocalPaths, localPaths, readLocalEndpoints } from '../../devkit/local-stack/local-state.js';
import { localClientConfig } from '../../devkit/engines/provision.js';
import { AdminCommandError } from './commands.js';
import type { TargetSpec } from './run-command.js';

/** Names of the deployed stack's outputs the admin CLI reads (the stack declares the same names). */
export interface StackOutputNames {
  tenancyTableName: string;
  rateTableName: string;
  /** Present on a stack deployed with `dataRetentionDays`. */
  dataRetentionDays?: string;
  dataBucketName: string;
}

/** What a command needs to reach the tenancy table. */
export interface AdminTarget {
  tenancyTable: string;
  rateTable: string;
  dynamodb: DynamoDBClientConfig;
  /** The stack's `dataRetentionDays`, when set: the ceiling `org show` and `org usage` report. */
  retentionCeilingDays?: number;
  /** The data bucket, where erasure requests are kept (`erase` commands). */
  dataBucket: string;
  s3: S3ClientConfig;
}

/** The local stack, through the `endpoints.json` that `npm start` writes. */
export function localTarget(paths: LocalPaths = localPaths()): AdminTarget {
  const endpoints = readLocalEndpoints(paths);
  return { tenancyTable: endpoints.tables.tenancy, rateTable: endpoints.tables.rate, dynamodb: localClientConfig(endpoints.dynamodb), dataBucket: endpoints.bucket, s3: localClientConfig(endpoints.s3) };
}

/** A deployed stack: its table names come from the CloudFormation outputs; credentials from the usual AWS chain. */
export async function stackTarget(cloudformation: CloudFormationClient, stackName: string, region: string, outputs: StackOutputNames): Promise<AdminTarget> {
  const values = await stackOutputs(cloudformation, stackName);
  const output = (key: string) => {
    const found = values[key];
    if (!found) throw new AdminCommandError(`stack ${stackName} in ${region} has no output ${key}`);
    return found;
  };
  const ceiling = outputs.dataRetentionDays === undefined ? undefined : values[outputs.dataRetentionDays];
  return {
    tenancyTable: output(outputs.tenancyTableName),
    rateTable: output(outputs.rateTableName),
    dynamodb: { region },
    dataBucket: output(outputs.dataBucketName),
    s3: { region },
    ...(ceiling ? { retentionCeilingDays: Number(ceiling) } : {}),
  };
}

export async function resolveTarget(spec: TargetSpec): Promise<AdminTarget> {
  if (spec.kind === 'local') return localTarget();
  // Imported only here: the stack module loads the CDK library.
  const { OUTPUTS } = await import('../../lib/trace-ingest-stack.js');
  const cloudformation = new CloudFormationClient({ region: spec.region });
  try {
    return await stackTarget(cloudformation, spec.stackName, spec.region, OUTPUTS);
  } finally {
    cloudformation.destroy();
  }
}
