import { adminCommand } from '../../../scripts/admin/admin-command.js';
import { USAGE } from '../../../scripts/admin/run-command.js';
import { runCommand } from '../../support/run-command.js';

describe('admin CLI', () => {
  it('prints usage to stdout for --help and exits 0', async () => {
    expect(await runCommand(adminCommand, ['--help'])).toEqual({ code: 0, stdout: `${USAGE}\n`, stderr: '' });
  });

  it('prints the usage on stderr with exit status 2 when given nothing', async () => {
    expect(await runCommand(adminCommand, [])).toEqual({ code: 2, stdout: '', stderr: `${USAGE}\n` });
  });
});
