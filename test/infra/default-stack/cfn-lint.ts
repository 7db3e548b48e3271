import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { CfnElement } from 'aws-cdk-lib';
import { defaultStack } from '../support/synth-stack.js';

/** One finding of `cfn-lint --format json`. */
interface CfnLintFinding {
  Level: 'Error' | 'Warning' | 'Informational';
  Message: string;
  Rule: { Id: string };
  Location: { Path: (string | number)[] };
}

const { stack, template } = defaultStack();
const logicalId = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as CfnElement);

/**
 * Warnings kept, one line each with its reason. Everything else cfn-lint reports fails the test, and
 * an acknowledgement that matches nothing fails it too, so the list cannot go stale.
 */
const ACKNOWLEDGED: { rule: string; resource: string; reason: string }[] = [
  { rule: 'W3005', resource: logicalId(stack.ingest.handler), reason: 'CDK\'s Function depends on its role explicitly as well as by GetAtt; harmless, and not ours to remove' },
  { rule: 'W3005', resource: logicalId(stack.landing.consumer), reason: 'as above (CDK\'s Function and its role)' },
  { rule: 'W3005', resource: logicalId(stack.compaction.planner), reason: 'as above (CDK\'s Function and its role)' },
  { rule: 'W3005', resource: logicalId(stack.compaction.worker), reason: 'as above (CDK\'s Function and its role)' },
  {
    rule: 'W3005',
    resource: Object.keys(template.toJSON().Resources as object).find((id) => id.startsWith('AWSCDKTriggerCustomResourceProviderCustomResourceProviderHandler')) ?? 'the trigger provider',
    reason: 'as above, in the provider CDK adds for the planner\'s first run (triggers.Trigger)',
  },
  { rule: 'W3005', resource: logicalId(stack.retention.sweeper), reason: 'as above (CDK\'s Function and its role)' },
];

const cfnLintVersion = spawnSync('cfn-lint', ['--version'], { encoding: 'utf8' });

describe('cfn-lint, AWS\'s template linter, on the synthesized template', () => {
  let findings: CfnLintFinding[];
  beforeAll(() => {
    if (cfnLintVersion.status !== 0) throw new Error('cfn-lint is not on PATH: pip install cfn-lint==1.51.0 (.ci/run does)');
    const dir = mkdtempSync(path.join(tmpdir(), 'cfn-lint-'));
    try {
      const file = path.join(dir, 'template.json');
      writeFileSync(file, JSON.stringify(template.toJSON(), null, 1));
      // cfn-lint exits non-zero when it finds anything; its findings are on stdout either way.
      let output: string;
      try {
        output = execFileSync('cfn-lint', ['--format', 'json', '--', file], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
      } catch (error) {
        output = String((error as { stdout?: string }).stdout ?? '');
        if (output.trim() === '') throw error;
      }
      findings = JSON.parse(output) as CfnLintFinding[];
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('runs the version the machines have', () => {
    expect(cfnLintVersion.stdout).toMatch(/^cfn-lint 1\.\d+\.\d+/);
  });

  it('finds no errors', () => {
    expect(findings.filter((finding) => finding.Level === 'Error').map((finding) => `${finding.Rule.Id} ${finding.Location.Path.join('/')}: ${finding.Message}`)).toEqual([]);
  });

  it('finds no warning that is not acknowledged with its reason', () => {
    const unacknowledged = findings
      .filter((finding) => finding.Level === 'Warning')
      .filter((finding) => !ACKNOWLEDGED.some((ack) => ack.rule === finding.Rule.Id && finding.Location.Path[1] === ack.resource));
    expect(unacknowledged.map((finding) => `${finding.Rule.Id} ${finding.Location.Path.join('/')}: ${finding.Message}`)).toEqual([]);
  });

  it.each(ACKNOWLEDGED.map((ack) => [ack.rule, ack.resource, ack]))('acknowledges %s on %s only while cfn-lint still reports it', (_, __, ack) => {
    expect(findings.some((finding) => finding.Rule.Id === ack.rule && finding.Location.Path[1] === ack.resource)).toBe(true);
  });
});
