import { readFileSync } from 'node:fs';
import path from 'node:path';
import { AssetManifestArtifact } from 'aws-cdk-lib/cx-api';
import { HOURS_PER_MONTH, PRICES } from '../../../bench/cost/prices.js';
import { defaultStack, PROJECT_ROOT } from '../support/synth-stack.js';

/** The "## Checklist" section at the top of docs/deploy.md, its line breaks as spaces. */
function checklist(): string {
  const deploy = readFileSync(path.join(PROJECT_ROOT, 'docs/deploy.md'), 'utf8');
  const start = deploy.indexOf('## Checklist');
  if (start < 0) throw new Error('docs/deploy.md has no "## Checklist"');
  return deploy.slice(start, deploy.indexOf('\n## ', start + 1)).replace(/\s+/g, ' ');
}

const dollars = (value: number) => `$${value.toFixed(2)}`;

/**
 * The custom metrics published on every run of the two scheduled functions (the planner and the retention sweep),
 * however idle the stack: one `addMetric` each in their handlers.
 */
function idleCustomMetrics(): number {
  const handlers = ['lambda/compaction/create-planner-handler.ts', 'lambda/retention/create-retention-handler.ts'];
  return handlers.reduce((count, file) => count + (readFileSync(path.join(PROJECT_ROOT, file), 'utf8').match(/\.addMetric\(/g) ?? []).length, 0);
}
const NUMBER_WORDS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];

describe('the deploy checklist of docs/deploy.md, against the synthesized stack', () => {
  const { app, stack, template } = defaultStack();
  const text = checklist();
  const { account, region } = stack;

  it('names the bootstrap roles the CDK CLI assumes for this stack, and the one CloudFormation acts as', () => {
    const assembly = app.synth();
    const artifact = assembly.getStackArtifact(stack.artifactId);
    const manifests = assembly.artifacts.filter((a): a is AssetManifestArtifact => a instanceof AssetManifestArtifact).map((a) => a.contents);
    expect(manifests.flatMap((manifest) => Object.keys(manifest.dockerImages ?? {}))).toEqual([]);
    const fileRoles = manifests.flatMap((manifest) => Object.values(manifest.files ?? {}).flatMap((file) => Object.values(file.destinations).map((d) => d.assumeRoleArn)));
    const arns = [artifact.lookupRole?.arn, artifact.assumeRoleArn, ...fileRoles, artifact.cloudFormationExecutionRoleArn];
    const expected = new Set(arns.map((arn) => String(arn).split(':role/')[1]?.replace(`-${account}-${region}`, '-<account>-<region>')));
    const named = new Set(text.match(/cdk-[a-z0-9]+-[a-z-]+-role-<account>-<region>/g));
    expect(named).toEqual(expected);
    expect(expected.size).toBe(4);
  });

  it('prices the idle month from what the template holds', () => {
    const alarms = Object.keys(template.findResources('AWS::CloudWatch::Alarm')).length;
    expect(Object.keys(template.findResources('AWS::CloudWatch::Dashboard'))).toHaveLength(1);
    template.hasResourceProperties('AWS::Kinesis::Stream', { StreamModeDetails: { StreamMode: 'ON_DEMAND' } });
    const stream = HOURS_PER_MONTH * PRICES.kinesisOnDemandStreamHour;
    const count = idleCustomMetrics();
    const metrics = count * PRICES.cloudWatchCustomMetricMonth;
    expect(text).toContain(`on-demand stream ${dollars(stream)}`);
    expect(text).toContain(`the dashboard ${dollars(PRICES.cloudWatchDashboardMonth)}, ${alarms} alarms ${dollars(alarms * PRICES.cloudWatchAlarmMonth)}`);
    expect(text).toMatch(new RegExp(`${NUMBER_WORDS[count]} custom metrics[^$]*\\${dollars(metrics)}`));
    const idle = stream + PRICES.cloudWatchDashboardMonth + alarms * PRICES.cloudWatchAlarmMonth + metrics;
    expect(text).toContain(`Idle cost: ≈ $${Math.round(idle)} a month`);
    expect(text).toContain(`makes it ≈ $${Math.round(idle - stream + HOURS_PER_MONTH * PRICES.kinesisShardHour)}`);
  });
});
