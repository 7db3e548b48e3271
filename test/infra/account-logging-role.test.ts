import { AwsSolutionsChecks } from 'cdk-nag';
import { DEFAULT_CONFIG } from '../../lib/config.js';
import { synthStack } from './support/synth-stack.js';

/**
 * API Gateway writes every REST API's logs of a region through one account setting, the CloudWatch role ARN
 * (AWS::ApiGateway::Account). A stack that owns it takes it over from whoever set it, and a failed first create of
 * that stack deletes its role while the setting still names it: every REST API of the region stops logging.
 */
describe('the account\'s API Gateway CloudWatch role', () => {
  const resourcesOf = (apiGatewayCloudWatchRole: boolean) => {
    const { stack, template } = synthStack({ config: { ...DEFAULT_CONFIG, apiGatewayCloudWatchRole } });
    return { stack, resources: Object.values(template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string }>) };
  };
  const apiGatewayRoles = <T extends { Type: string; Properties: Record<string, unknown> }>(resources: T[]) =>
    resources.filter((r) => r.Type === 'AWS::IAM::Role' && JSON.stringify(r.Properties.AssumeRolePolicyDocument).includes('apigateway.amazonaws.com'));

  it('is left to the account by default: the stack neither sets it nor makes a role for it', () => {
    expect(DEFAULT_CONFIG.apiGatewayCloudWatchRole).toBe(false);
    const { resources } = resourcesOf(false);
    expect(resources.filter((r) => r.Type === 'AWS::ApiGateway::Account')).toEqual([]);
    expect(apiGatewayRoles(resources)).toEqual([]);
  });

  it('is owned when asked: the stack sets it to a role of its own, both kept when the stack goes and deleted only by a rolled-back first create', () => {
    const { stack, resources } = resourcesOf(true);
    const accounts = resources.filter((r) => r.Type === 'AWS::ApiGateway::Account');
    const roles = apiGatewayRoles(resources);
    expect(accounts).toHaveLength(1);
    expect(roles).toHaveLength(1);
    expect(accounts[0]?.Properties.CloudWatchRoleArn).toEqual({ 'Fn::GetAtt': [stack.getLogicalId(stack.ingest.api.node.findChild('CloudWatchRole').node.defaultChild as never), 'Arn'] });
    for (const kept of [...accounts, ...roles]) expect(kept.DeletionPolicy).toBe('RetainExceptOnCreate');
    const report = new AwsSolutionsChecks(stack).validateScope(stack);
    expect(report.violations).toEqual([]);
  });
});
