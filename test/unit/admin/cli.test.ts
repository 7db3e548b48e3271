import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { USAGE } from '../../../scripts/admin/run-command.js';

const ROOT = path.resolve(__dirname, '../../..');
const run = promisify(execFile);

describe('admin CLI', () => {
  it('prints usage to stdout for --help and exits 0', async () => {
    const { stdout, stderr } = await run(path.join(ROOT, 'node_modules/.bin/tsx'), ['scripts/admin/cli.ts', '--help'], { cwd: ROOT });
    expect(stdout).toBe(`${USAGE}\n`);
    expect(stderr).toBe('');
  }, 30_000);
});
