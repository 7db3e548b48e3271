import { Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { defaultStack } from '../support/synth-stack.js';

describe('cdk-nag AwsSolutions', () => {
  const { stack } = defaultStack();

  it('reports no unacknowledged finding', () => {
    const report = new AwsSolutionsChecks(stack).validateScope(stack);
    const findings = report.violations.flatMap((violation) =>
      violation.violatingResources.map((resource) => `${violation.ruleName} at ${resource.constructPath ?? resource.resourceLogicalId}`),
    );
    expect(findings).toEqual([]);
  });

  it('acknowledges only the reviewed rules, each with a reason', () => {
    const acknowledged = stack.node.findAll().flatMap((construct: IConstruct) =>
      construct.node.metadata
        .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
        .flatMap((entry) => Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({ id, reason })))
        .map((rule) => ({ path: construct.node.path.replace(`${stack.node.path}/`, ''), id: rule.id.replace(/^Annotation::/, '').replace(/<[A-Za-z0-9]+\.Arn>/, '<bucket>'), reason: rule.reason })),
    );
    for (const rule of acknowledged) expect(rule.reason.length).toBeGreaterThan(40);
    expect(acknowledged.map((rule) => `${rule.path}: ${rule.id}`).sort()).toEqual(
      [
        'Compaction/DeadLetterQueue: AwsSolutions-SQS3',
        'Compaction/PlannerRole: AwsSolutions-IAM5[Resource::<bucket>/compacted/plans/*]',
        'Compaction/PlannerRole: AwsSolutions-IAM5[Resource::<bucket>/manifests/*]',
        'Compaction/PlannerRole: AwsSolutions-IAM5[Resource::<bucket>/erasures/*]',
        'Compaction/WorkerRole: AwsSolutions-IAM5[Resource::<bucket>/erasures/*]',
        'Compaction/WorkerRole: AwsSolutions-IAM5[Resource::<bucket>/erasures/index/*]',
        'Compaction/WorkerRole: AwsSolutions-IAM5[Resource::<bucket>/overflow/*]',
        'Compaction/WorkerRole: AwsSolutions-IAM5[Resource::<bucket>/compacted/*]',
        'Compaction/WorkerRole: AwsSolutions-IAM5[Resource::<bucket>/manifests/*]',
        'Compaction/WorkerRole: AwsSolutions-IAM5[Resource::<bucket>/spans/*]',
        'Compaction/WorkerRole: AwsSolutions-IAM5[Resource::<bucket>/traces/*]',
        'Ingest/Api: AwsSolutions-APIG2',
        'Ingest/Api: AwsSolutions-APIG3',
        'Ingest/Api: AwsSolutions-APIG4',
        'Ingest/Api: AwsSolutions-COG4',
        'Ingest/HandlerRole: AwsSolutions-IAM5[Resource::<bucket>/overflow/*]',
        'Landing/AccessLogsBucket: AwsSolutions-S1',
        'Landing/ConsumerRole: AwsSolutions-IAM5[Resource::<bucket>/dead-letter/*]',
        'Landing/ConsumerRole: AwsSolutions-IAM5[Resource::<bucket>/overflow/*]',
        'Landing/ConsumerRole: AwsSolutions-IAM5[Resource::<bucket>/spans/*]',
        'Landing/ConsumerRole: AwsSolutions-IAM5[Resource::<bucket>/traces/*]',
        'Landing/FailureQueue: AwsSolutions-SQS3',
        'Retention/SweeperRole: AwsSolutions-IAM5[Resource::<bucket>/overflow/*]',
      ].sort(),
    );
  });
});
