import { readFileSync } from 'node:fs';
import path from 'node:path';
import { RUNBOOK_DOCUMENT, runbookLink } from '../../../lib/constructs/monitoring.js';
import { withoutHash } from '../../../scripts/cli/stack.js';
import { defaultStack, PROJECT_ROOT } from '../support/synth-stack.js';

const read = (file: string) => readFileSync(path.join(PROJECT_ROOT, file), 'utf8');
const operations = read(RUNBOOK_DOCUMENT);
const deploy = read('docs/deploy.md');

interface Resource {
  Type: string;
  Properties?: Record<string, unknown>;
}

/** The runbook sections: the `### <alarm id>` headings under "## Alarms", with their text. */
function runbookSections(): Map<string, string> {
  const alarmsPart = operations.slice(operations.indexOf('\n## Alarms\n'), operations.indexOf('\n## Teardown\n'));
  const sections = new Map<string, string>();
  for (const part of alarmsPart.split('\n### ').slice(1)) {
    const [title = '', ...body] = part.split('\n');
    sections.set(title.trim(), body.join('\n'));
  }
  return sections;
}

describe('docs/operations.md and docs/deploy.md against the synthesized template', () => {
  const { stack, template } = defaultStack();
  const resources = template.toJSON().Resources as Record<string, Resource>;
  const alarms = stack.monitoring.alarms.map((alarm) => ({
    id: alarm.node.id,
    description: String(resources[stack.getLogicalId(alarm.node.defaultChild as never)]?.Properties?.AlarmDescription ?? ''),
  }));
  const alarmsInTemplate = Object.values(resources).filter((resource) => resource.Type === 'AWS::CloudWatch::Alarm').length;
  const sections = runbookSections();

  it('has one runbook section per alarm, and each alarm\'s description links to it', () => {
    expect(alarms.length).toBe(alarmsInTemplate);
    expect([...sections.keys()].sort()).toEqual(alarms.map((alarm) => alarm.id).sort());
    for (const alarm of alarms) expect(alarm.description).toMatch(new RegExp(` Runbook: ${runbookLink(alarm.id).replace('.', '\\.')}$`));
  });

  it('gives every section what fired, what it means for users, three commands, recovery and clearing', () => {
    for (const [id, body] of sections) {
      for (const part of ['- **What fired**:', '- **For users**:', '- **First three commands**:', '- **Recover**:', '- **Clear**:']) {
        expect({ id, has: body.includes(part) ? part : `missing ${part}` }).toEqual({ id, has: part });
      }
      const commands = body.split('```sh\n')[1]?.split('```')[0]?.trim().split('\n') ?? [];
      expect({ id, commands: commands.length }).toEqual({ id, commands: 3 });
    }
  });

  it('names only resources the stack has in its `ops resources --name` commands', () => {
    const names = new Set(Object.keys(resources).map(withoutHash));
    const used = [...new Set([...operations.matchAll(/--name ([A-Za-z0-9]+)/g)].map((match) => match[1] as string))].filter((name) => name !== 'LOGICAL_ID');
    expect(used.length).toBeGreaterThan(10);
    for (const name of used) expect({ name, known: names.has(name) }).toEqual({ name, known: true });
    for (const group of ['IngestHandlerLogs', 'IngestAccessLogs', 'LandingConsumerLogs', 'CompactionPlannerLogs', 'CompactionWorkerLogs']) {
      expect({ group, type: resources[Object.keys(resources).find((id) => withoutHash(id) === group) ?? '']?.Type }).toEqual({ group, type: 'AWS::Logs::LogGroup' });
    }
  });

  it('docs/deploy.md states the number of alarms the template has, wherever it counts them', () => {
    expect(deploy).toContain(`Dashboard plus **${alarmsInTemplate} alarms**`);
    const counts = [...deploy.matchAll(/(\d+) alarms\b/g)].map((match) => Number(match[1]));
    expect(counts.length).toBeGreaterThanOrEqual(2);
    expect(counts).toEqual(counts.map(() => alarmsInTemplate));
  });

  it('docs/deploy.md lists every lifecycle rule of the data bucket with its prefix and days', () => {
    const bucket = Object.entries(resources).find(([id, resource]) => resource.Type === 'AWS::S3::Bucket' && id.startsWith('LandingDataBucket'))?.[1];
    const rules = (bucket?.Properties?.LifecycleConfiguration as { Rules: { Prefix?: string; ExpirationInDays?: number; AbortIncompleteMultipartUpload?: { DaysAfterInitiation: number } }[] }).Rules;
    const lifecycle = deploy.slice(deploy.indexOf('lifecycle: '), deploy.indexOf('### Compaction'));
    expect(rules.length).toBeGreaterThan(3);
    for (const rule of rules) {
      if (rule.AbortIncompleteMultipartUpload) expect(lifecycle).toContain(`incomplete multipart uploads ${rule.AbortIncompleteMultipartUpload.DaysAfterInitiation} day`);
      else expect(lifecycle).toMatch(new RegExp(`\`${rule.Prefix}\`[^,;]* ${rule.ExpirationInDays} days`));
    }
    // dataRetentionDays adds two rules: the doc names both prefixes.
    expect(lifecycle).toMatch(/`compacted\/` and `manifests\/` after\s+`dataRetentionDays`/);
  });
});
