import { type CloudFormationClient, GetTemplateCommand } from '@aws-sdk/client-cloudformation';
import { type StackResource, stackResources, stackStatus } from '../cli/stack.js';

/** A resource `cdk destroy` leaves in the account (its deletion policy is RetainExceptOnCreate or Retain), and how to delete it by hand. */
export interface KeptResource extends StackResource {
  /** Why the stack keeps it. */
  why: string;
  /** The shell command that deletes it, for when you are sure. */
  deleteWith: string;
}

export interface TeardownPlan {
  stack: string;
  /** The stack's status: `ROLLBACK_FAILED` or `ROLLBACK_COMPLETE` after a first create that failed. */
  status: string;
  /** Resources CloudFormation deletes with the stack, by type. */
  deleted: Record<string, number>;
  kept: KeptResource[];
}

const RETAINED = new Set(['Retain', 'RetainExceptOnCreate']);

/** What each kind of kept resource holds, and the command that deletes it. */
function keptResource(resource: StackResource): KeptResource {
  const name = resource.physicalId;
  switch (resource.type) {
    case 'AWS::S3::Bucket':
      return { ...resource, why: 'landed data, compacted data and manifests (or access logs): kept so a teardown never deletes data', deleteWith: `aws s3 rb s3://${name} --force` };
    case 'AWS::DynamoDB::Table':
      return {
        ...resource,
        why: 'plans, organizations and API key hashes (or rate counters): deletion protection and point-in-time recovery on',
        deleteWith: `aws dynamodb update-table --table-name ${name} --no-deletion-protection-enabled && aws dynamodb delete-table --table-name ${name}`,
      };
    case 'AWS::Kinesis::Stream':
      return { ...resource, why: 'traces accepted but not landed yet (24 h retention)', deleteWith: `aws kinesis delete-stream --stream-name ${name} --enforce-consumer-deletion` };
    case 'AWS::IAM::Role':
      return {
        ...resource,
        why: "API Gateway's CloudWatch role, an account-wide setting other APIs of the region may use",
        deleteWith:
          `for arn in $(aws iam list-attached-role-policies --role-name ${name} --query 'AttachedPolicies[].PolicyArn' --output text); do ` +
          `aws iam detach-role-policy --role-name ${name} --policy-arn "$arn"; done && aws iam delete-role --role-name ${name}   # only if no other API of the region logs to CloudWatch`,
      };
    case 'AWS::ApiGateway::Account':
      return { ...resource, why: 'the region-wide API Gateway setting that names the CloudWatch role: nothing to delete', deleteWith: '# nothing: it is a setting of the account, not a resource' };
    default:
      return { ...resource, why: 'its deletion policy is Retain', deleteWith: `# delete ${name} (${resource.type}) in the console or with its service's CLI` };
  }
}

/** The statuses of a stack whose first create failed and rolled back (it can only be deleted). */
const ROLLED_BACK_CREATE = new Set(['ROLLBACK_FAILED', 'ROLLBACK_COMPLETE']);

/**
 * What `cdk destroy` would delete and keep for a deployed stack: the deployed template's deletion
 * policies decide, the stack's resource list gives the physical names. Resources a rollback already
 * deleted are left out: after a failed first create, what is listed is exactly what it left.
 */
export async function teardownPlan(cloudformation: CloudFormationClient, stackName: string): Promise<TeardownPlan> {
  const { TemplateBody = '{}' } = await cloudformation.send(new GetTemplateCommand({ StackName: stackName, TemplateStage: 'Original' }));
  const template = JSON.parse(TemplateBody) as { Resources?: Record<string, { DeletionPolicy?: string }> };
  const retained = new Set(Object.entries(template.Resources ?? {}).filter(([, r]) => RETAINED.has(r.DeletionPolicy ?? '')).map(([id]) => id));
  const plan: TeardownPlan = { stack: stackName, status: await stackStatus(cloudformation, stackName), deleted: {}, kept: [] };
  for (const resource of await stackResources(cloudformation, stackName)) {
    if (resource.status === 'DELETE_COMPLETE') continue;
    if (retained.has(resource.logicalId)) plan.kept.push(keptResource(resource));
    else plan.deleted[resource.type] = (plan.deleted[resource.type] ?? 0) + 1;
  }
  return plan;
}

/** The plan as text a person reads before and after the teardown. */
export function describePlan(plan: TeardownPlan): string {
  const deleted = Object.entries(plan.deleted)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([type, count]) => `  ${count} × ${type}`);
  const kept = plan.kept.flatMap((resource) => [`  ${resource.type} ${resource.physicalId}`, `    kept: ${resource.why}`, `    delete: ${resource.deleteWith}`]);
  const rolledBack = ROLLED_BACK_CREATE.has(plan.status)
    ? [
        `Stack ${plan.stack} is ${plan.status}: its first create failed and rolled back. The resources below are what it left`,
        `(DynamoDB refuses to delete a table with deletion protection on, rollback included); nothing else remains.`,
        '',
      ]
    : [];
  return [...rolledBack, `Deleted with stack ${plan.stack}:`, ...deleted, `Kept (deletion policy RetainExceptOnCreate or Retain), with the command that deletes each:`, ...kept].join('\n');
}

/**
 * The `npx cdk destroy` of a deployed stack. The CLI synthesizes the app first, and the synth refuses a stack name
 * whose Glue form is lossy unless told the database the stack has (lib/constructs/trace-catalog.ts): its output says.
 */
export function cdkDestroyArgs(stackName: string, outputs: Record<string, string>): string[] {
  const database = outputs.GlueDatabaseName;
  return ['cdk', 'destroy', stackName, '--force', '-c', `stackName=${stackName}`, ...(database === undefined ? [] : ['-c', `glueDatabaseName=${database}`])];
}
