import { parseCommandLine, UsageError } from '../../../scripts/cli/command-line.js';

describe('parseCommandLine', () => {
  const options = { json: { type: 'boolean' }, stack: { type: 'string' }, tag: { type: 'string', multiple: true } } as const;

  it('refuses an option given twice with a usage error, where the parser would keep the last', () => {
    expect(() => parseCommandLine(['--stack', 'a', '--stack', 'b'], options, 'usage')).toThrow(new UsageError('option --stack is given more than once; give it once'));
    expect(() => parseCommandLine(['--json', '--json'], options, 'usage')).toThrow(UsageError);
  });

  it('lets an option declared multiple repeat, and parses the rest as before', () => {
    expect(parseCommandLine(['--tag', 'a', '--tag', 'b', '--stack', 's'], options, 'usage')?.values).toEqual({ tag: ['a', 'b'], stack: 's' });
  });
});
