import { type CloudFormationClient, DescribeStacksCommand, ListStackResourcesCommand } from '@aws-sdk/client-cloudformation';

/** A resource of a deployed stack: its logical id (as in the template) and its physical name. */
export interface StackResource {
  logicalId: string;
  physicalId: string;
  type: string;
  /** CloudFormation's status of the resource: `DELETE_COMPLETE` for one a rollback already deleted. */
  status: string;
}

/** A deployed stack's status (`CREATE_COMPLETE`, `ROLLBACK_FAILED`, …). */
export async function stackStatus(cloudformation: CloudFormationClient, stackName: string): Promise<string> {
  const { Stacks = [] } = await cloudformation.send(new DescribeStacksCommand({ StackName: stackName }));
  return Stacks[0]?.StackStatus ?? '';
}

/** The outputs of a deployed stack, by key. */
export async function stackOutputs(cloudformation: CloudFormationClient, stackName: string): Promise<Record<string, string>> {
  const { Stacks = [] } = await cloudformation.send(new DescribeStacksCommand({ StackName: stackName }));
  return Object.fromEntries((Stacks[0]?.Outputs ?? []).flatMap((output) => (output.OutputKey && output.OutputValue ? [[output.OutputKey, output.OutputValue]] : [])));
}

/** Every resource of a deployed stack, all pages. */
export async function stackResources(cloudformation: CloudFormationClient, stackName: string): Promise<StackResource[]> {
  const resources: StackResource[] = [];
  let NextToken: string | undefined;
  do {
    const page = await cloudformation.send(new ListStackResourcesCommand({ StackName: stackName, NextToken }));
    for (const summary of page.StackResourceSummaries ?? []) {
      resources.push({ logicalId: summary.LogicalResourceId ?? '', physicalId: summary.PhysicalResourceId ?? '', type: summary.ResourceType ?? '', status: summary.ResourceStatus ?? '' });
    }
    NextToken = page.NextToken;
  } while (NextToken);
  return resources;
}

/** A logical id without the 8-character hash CDK appends (`IngestHandler3EA8EDEE` → `IngestHandler`). */
export const withoutHash = (logicalId: string): string => logicalId.replace(/[0-9A-F]{8}$/, '');
