import { readFileSync } from 'node:fs';
import path from 'node:path';
import { COMMAND_SPECS, COMMANDS } from '../../../scripts/admin/run-command.js';

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
