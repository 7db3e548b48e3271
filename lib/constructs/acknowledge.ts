import { Stack, Validations } from 'aws-cdk-lib';
import type { Bucket, CfnBucket } from 'aws-cdk-lib/aws-s3';
import type { IConstruct } from 'constructs';

/**
 * Acknowledges cdk-nag IAM5 on object ARNs under key prefixes (`<bucket>/overflow/*`): the wildcard
 * stands for object names the functions choose at run time, inside a prefix reserved to them.
 */
export function acknowledgePrefixWildcards(scope: IConstruct, bucket: Bucket, prefixes: readonly string[], reason: string): void {
  const logicalId = Stack.of(bucket).resolve((bucket.node.defaultChild as CfnBucket).logicalId) as string;
  for (const prefix of prefixes) {
    Validations.of(scope).acknowledge({ id: `AwsSolutions-IAM5[Resource::<${logicalId}.Arn>/${prefix}*]`, reason });
  }
}
