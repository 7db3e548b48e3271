import { parseCommandLine, UsageError } from '../../../scripts/cli/command-line.js';

const out = { stdout: { write: () => true }, stderr: { write: () => true } };

describe('parseCommandLine', () => {
  const options = { json: { type: 'boolean' }, stack: { type: 'string' }, tag: { type: 'string', multiple: true } } as const;

  it('refuses an option given twice with a usage error, where the parser would keep the last', () => {
    expect(() => parseCommandLine(['--stack', 'a', '--stack', 'b'], options, 'usage', out)).toThrow(new UsageError('option --stack is given more than once; give it once'));
    expect(() => parseCommandLine(['--json', '--json'], options, 'usage', out)).toThrow(UsageError);
  });

  it('lets an option declared multiple repeat, and parses the rest as before', () => {
    expect(parseCommandLine(['--tag', 'a', '--tag', 'b', '--stack', 's'], options, 'usage', out)?.values).toEqual({ tag: ['a', 'b'], stack: 's' });
  });
});
