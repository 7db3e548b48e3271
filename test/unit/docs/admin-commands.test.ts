import { readFileSync } from 'node:fs';
import path from 'node:path';
import { COMMAND_SPECS, COMMANDS, parseAdminArgs } from '../../../scripts/admin/run-command.js';

const ROOT = path.resolve(__dirname, '../../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

describe('the admin CLI and its docs agree', () => {
  it('docs/local.md lists every admin command with every option it takes', () => {
    const local = read('docs/local.md');
    for (const command of COMMANDS) {
      const line = local.split('\n').find((candidate) => candidate === command || candidate.startsWith(`${command} `));
      expect({ command, line }).toEqual({ command, line: expect.any(String) });
      const spec = COMMAND_SPECS[command];
      for (const option of spec.required) expect({ command, line }).toEqual({ command, line: expect.stringContaining(`--${option}`) });
    }
  });

  it('docs/api.md documents each plan and organization command the CLI has', () => {
    const api = read('docs/api.md');
    for (const command of COMMANDS.filter((name) => name.startsWith('plan ') || name.startsWith('org '))) expect(api).toContain(command);
  });
});

describe('docs/operations.md on how erase create matches ids', () => {
  const operations = read('docs/operations.md');
  const erasure = operations.slice(operations.indexOf('\n## Erasure\n')).replace(/\s+/g, ' ');

  it('says user and session ids match exactly, case and Unicode form included', () => {
    expect(erasure).toContain('`--user-id` and `--session-id` match **exactly as sent** by the traces: case and Unicode form included.');
  });

  it('says which forms a trace id takes and that anything else is refused', () => {
    expect(erasure).toContain('`--trace-id` takes a UUID (`0639ad5e-ce3c-4e4d-9a34-1efb185b9d8b`) or the 32 hex digits of an OpenTelemetry trace id');
    expect(erasure).toContain('is refused with the forms to use');
  });

  it('tells operators to re-issue the trace-id erasures made before the fix that report rows_removed: 0', () => {
    expect(erasure).toContain('**Trace-id erasures made before trace ids were normalised.**');
    expect(erasure).toMatch(/`rows_removed: 0`[^.]*`requested_at` before you upgraded[^.]*; a done request keeps only keyed hashes of its ids \(`selector: null`\), so take the trace ids from your own record of the request, and issue `erase create` again with them\./);
  });
});

describe('every admin command line the docs show parses as the CLI reads it', () => {
  const files = ['README.md', 'docs/local.md', 'docs/deploy.md', 'docs/api.md', 'docs/operations.md'];
  /** `admin -- …` up to a backtick, a pipe, a comment or the end of the line; placeholders (`<org>`, `N`, `…`) become sample values. */
  const lines = files.flatMap((file) =>
    [...read(file).matchAll(/admin -- ([^`|#\n]*)/g)]
      .map((match) => (match[1] as string).trim())
      .filter((line) => line !== '' && !line.startsWith('<command>') && line !== '…' && !line.endsWith('--help'))
      .map((line) => ({ file, line })),
  );

  it.each(lines.map(({ file, line }) => [file, line]))('%s: %s', (_file, line) => {
    const args = line
      .replace(/<[^>]+>/g, 'sample')
      .replace(/"\$STACK"/g, 'TraceIngest')
      .replace(/ (N|Y|X)\b/g, (_, value: string) => (value === 'N' ? ' 7' : ' sample'))
      .split(/\s+/);
    const previous = process.env.AWS_REGION;
    process.env.AWS_REGION = 'eu-west-1';
    try {
      if (args.length === 2 && args[0] === 'org' && args[1] === 'update') return; // prose naming the command
      expect(() => parseAdminArgs(args)).not.toThrow();
    } finally {
      if (previous === undefined) delete process.env.AWS_REGION;
      else process.env.AWS_REGION = previous;
    }
  });

  it('finds the examples it checks', () => {
    expect(lines.length).toBeGreaterThan(15);
  });
});
