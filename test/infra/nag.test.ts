import { AwsSolutionsChecks } from 'cdk-nag';
import { synthStack } from './support/synth-stack.js';

describe('cdk-nag AwsSolutions', () => {
  const { stack } = synthStack({ entries: { landing: 'test/infra/support/stub-handler.ts' } });

  it('reports no unacknowledged finding', () => {
    const report = new AwsSolutionsChecks(stack).validateScope(stack);
    const findings = report.violations.flatMap((violation) =>
      violation.violatingResources.map((resource) => `${violation.ruleName} ${resource.constructPath ?? resource.resourceLogicalId}: ${violation.description.slice(0, 120)}`),
    );
    expect(findings).toEqual([]);
  });
});
