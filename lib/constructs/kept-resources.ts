import { RemovalPolicy } from 'aws-cdk-lib';

/**
 * The removal policy of everything the stack keeps when it is deleted (the tables, the buckets, API Gateway's
 * CloudWatch role and account setting, the stream with `streamRemovalPolicy=retain`): CloudFormation's
 * `DeletionPolicy: RetainExceptOnCreate` with `UpdateReplacePolicy: Retain`.
 *
 * Plain `Retain` also keeps what a failed first `cdk deploy` created while it rolls back: resources that belong
 * to no stack, one more set per retry. `RetainExceptOnCreate` deletes what the rolled-back operation created
 * and retains in every other operation, stack deletion included
 * (https://aws.amazon.com/about-aws/whats-new/2023/07/aws-cloudformation-deletion-policies-dev-test-cycle/;
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-attribute-deletionpolicy.html).
 *
 * Two documented limits remain, both of the delete itself, not of the policy:
 * - DynamoDB refuses to delete a table with deletion protection on, whoever asks, CloudFormation's rollback
 *   included (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/WorkingWithTables.Basics.html#WorkingWithTables.Basics.DeletionProtection):
 *   a rolled-back first create stops in `ROLLBACK_FAILED` with the two tables still in the stack, where
 *   `npm run destroy` lists them with the command that deletes each (docs/operations.md "Teardown").
 * - S3 deletes only an empty bucket (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-s3-bucket.html):
 *   a bucket that received objects before the rollback (it cannot, unless the API served traffic) stays the same way.
 */
export const KEPT_UNLESS_CREATE_ROLLED_BACK = RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE;
