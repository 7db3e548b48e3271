import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { benchUsage } from '../../../bench/command-line.js';
import { COMMANDS, usageFor, USAGE as ADMIN_USAGE } from '../../../scripts/admin/run-command.js';
import { QUERY_USAGE } from '../../../scripts/local/query.js';
import { COMPACT_USAGE, START_USAGE } from '../../../scripts/local/usage.js';
import { DESTROY_USAGE, OPS_USAGE } from '../../../scripts/ops/usage.js';
import { REPLAY_USAGE } from '../../../scripts/replay/replay-usage.js';

const ROOT = path.resolve(__dirname, '../../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
const execute = promisify(execFile);

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(script: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Outcome> {
  try {
    const { stdout, stderr } = await execute(TSX, [script, ...args], { cwd: ROOT, env: { ...process.env, TRACE_INGEST_LOCAL_DIR: path.join(ROOT, '.no-such-local-stack'), ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** Runs the invocations a few at a time: each is a Node process with tsx. */
async function runAll(invocations: [string, string[]][]): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (let i = 0; i < invocations.length; i += 4) {
    outcomes.push(...(await Promise.all(invocations.slice(i, i + 4).map(([script, args]) => run(script, args)))));
  }
  return outcomes;
}

const ADMIN = 'scripts/admin/cli.ts';
const STACK_TRACE = /^\s+at /m;

describe('every command line prints its usage for --help, on stdout, with exit status 0', () => {
  it('start, compact, replay, query, ops, destroy and smoke', async () => {
    const cases: [string, string][] = [
      ['scripts/local/start.ts', START_USAGE],
      ['scripts/local/compact.ts', COMPACT_USAGE],
      ['scripts/replay/replay.ts', REPLAY_USAGE],
      ['scripts/local/query.ts', QUERY_USAGE],
      ['scripts/ops/cli.ts', OPS_USAGE],
    ];
    const outcomes = await runAll([...cases.map(([script]): [string, string[]] => [script, ['--help']]), ['scripts/ops/cli.ts', ['destroy', '--help']]]);
    cases.push(['scripts/ops/cli.ts destroy', DESTROY_USAGE]);
    const smoke = await run('scripts/smoke/smoke.ts', ['--help']);
    expect(smoke).toEqual({ code: 0, stdout: expect.stringMatching(/^usage: npm run smoke /), stderr: '' });
    outcomes.forEach((outcome, i) => expect({ script: cases[i]?.[0], ...outcome }).toEqual({ script: cases[i]?.[0], code: 0, stdout: cases[i]?.[1], stderr: '' }));
  }, 60_000);

  it('bench: its usage with every registered group, and nothing run or written (bench/results.json unchanged)', async () => {
    const results = readFileSync(path.join(ROOT, 'bench/results.json'));
    const outcome = await run('bench/run.ts', ['--help']);
    expect(outcome).toEqual({ code: 0, stdout: expect.stringMatching(/^usage: npm run bench \[-- GROUP \.\.\.\]\n/), stderr: '' });
    expect(outcome.stdout).toMatch(/^Groups: ingest, landing, .*\bcost\b/m);
    expect(outcome.stdout).toBe(benchUsage(outcome.stdout.match(/^Groups: (.*)$/m)![1]!.split(', ')));
    expect(readFileSync(path.join(ROOT, 'bench/results.json')).equals(results)).toBe(true);
  }, 60_000);

  it('admin, a group and a command, each through the command line', async () => {
    // Three processes pin the wiring (--help anywhere prints usageFor of the words before it, on stdout, exit 0);
    // the next test holds every group and command to its usage in-process: a process per command cost ~20 s.
    const invocations = [[], ['org'], ['org', 'create']];
    const outcomes = await runAll(invocations.map((args) => [ADMIN, [...args, '--help']]));
    outcomes.forEach((outcome, i) => {
      const args = invocations[i] as string[];
      expect({ args, ...outcome }).toEqual({ args, code: 0, stdout: `${args.length === 0 ? ADMIN_USAGE : usageFor(args)}\n`, stderr: '' });
    });
  }, 60_000);

  it('admin: every group lists its commands and every command its own synopsis', () => {
    const groups = [...new Set(COMMANDS.map((command) => command.split(' ')[0] as string))];
    expect(groups.length).toBeGreaterThan(2);
    for (const group of groups) {
      const usage = usageFor([group]);
      const own = COMMANDS.filter((command) => command.startsWith(`${group} `));
      expect({ group, listed: own.filter((command) => usage.includes(`  ${command} `)) }).toEqual({ group, listed: own });
      expect(usage).not.toEqual(ADMIN_USAGE);
    }
    const usages = COMMANDS.map((command) => usageFor(command.split(' ')));
    usages.forEach((usage, i) => expect(usage).toMatch(new RegExp(`^usage: npm run --silent admin -- ${COMMANDS[i]} .*\\n  \\S`)));
    expect(new Set(usages).size).toBe(COMMANDS.length);
  });
});

describe('a user error is one line and the usage on stderr, never a stack trace', () => {
  it('ops: an unknown command is refused before the stack, the region or credentials are looked at', async () => {
    const outcome = await run('scripts/ops/cli.ts', ['bogus', '--stack', 'X'], { AWS_REGION: '', AWS_DEFAULT_REGION: '' });
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toMatch(/^ops: unknown command 'bogus'\nusage: npm run --silent ops/);
  }, 30_000);

  it('ops and destroy without AWS credentials: one line that names what to set', async () => {
    // No credentials anywhere the SDK looks: no variables, no files, no instance metadata.
    const nowhere = { AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_SESSION_TOKEN: '', AWS_PROFILE: '', AWS_SHARED_CREDENTIALS_FILE: '/nonexistent', AWS_CONFIG_FILE: '/nonexistent', AWS_EC2_METADATA_DISABLED: 'true' };
    const outcomes = await Promise.all([['resources', '--stack', 'X', '--region', 'eu-west-1'], ['destroy', '--stack', 'X', '--region', 'eu-west-1']].map((args) => run('scripts/ops/cli.ts', args, nowhere)));
    expect(outcomes.map((o) => [o.code, o.stderr])).toEqual([
      [1, expect.stringMatching(/^ops: no AWS credentials: set AWS_PROFILE .* or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY .*\n$/)],
      [1, expect.stringMatching(/^destroy: no AWS credentials: set AWS_PROFILE/)],
    ]);
  }, 60_000);

  it('npm start with a PORT that is not a port', async () => {
    const outcome = await run('scripts/local/start.ts', [], { PORT: '80a' });
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toMatch(/^npm start: PORT must be a TCP port \(0-65535\), not '80a'\nusage: npm start/);
    expect(outcome.stderr).not.toMatch(STACK_TRACE);
  }, 30_000);

  it('npm start with an engine port another process holds: one line that names the setting, not the engine\'s bind error', async () => {
    const holder = createServer();
    const port = await new Promise<number>((resolve) => holder.listen(0, '127.0.0.1', () => resolve((holder.address() as { port: number }).port)));
    const state = mkdtempSync(path.join(tmpdir(), 'help-busy-port-'));
    try {
      const outcome = await run('scripts/local/start.ts', [], { S3_PORT: String(port), PORT: '0', TRACE_INGEST_LOCAL_DIR: state });
      expect(outcome.code).toBe(1);
      expect(outcome.stderr).toContain(`\nnpm start: port ${port} (S3_PORT or --s3-port) already in use by another process: choose another, or leave it unset for a free one\n`);
      expect(outcome.stderr).not.toMatch(STACK_TRACE);
    } finally {
      holder.close();
      rmSync(state, { recursive: true, force: true });
    }
  }, 90_000);

  it.each([
    ['scripts/replay/replay.ts', ['--local', '--shard', 's', '--from', 'abc', '--to', '1'], 2, /^replay: --from must be a Kinesis sequence number \(decimal digits\), not 'abc'\nusage: npm run replay/],
    ['scripts/replay/replay.ts', ['--nope'], 2, /^replay: Unknown option '--nope'/],
    ['scripts/replay/replay.ts', ['--failure', 'f.json', '--bucket', 'b', '--chunk-size', '-3'], 2, /^replay: --chunk-size must be a positive integer, not '-3'/],
    ['scripts/local/compact.ts', ['--now'], 2, /^compact: Unknown option '--now'\nusage: npm run compact/],
    ['scripts/local/query.ts', [], 2, /^query: no SQL given\nusage: npm run query/],
    [ADMIN, ['org', 'update', '--org', 'acme', '--per-minute', '-5'], 1, /^admin: --per-minute must be a whole number >= 0 or "none", or "plan" to follow the plan, not '-5'\n$/],
    ['scripts/ops/cli.ts', ['queue', 'purge', '--stack', 'S', '--region', 'eu-west-1', '--queue', 'failure'], 2, /^ops: queue purge deletes every message of the failure queue: add --yes/],
    [ADMIN, ['plan', 'create', '--plan', 'team', '--per-minute', 'lots'], 1, /^admin: --per-minute must be a whole number >= 0 or "none", not 'lots'\n$/],
    ['scripts/local/start.ts', ['--port', '8080'], 2, /^npm start: Unknown option '--port'/],
    ['bench/run.ts', ['ingest', 'bogus'], 2, /^bench: unknown group 'bogus'\nusage: npm run bench/],
    ['scripts/local/start.ts', ['--s3-port', 'x'], 2, /^npm start: --s3-port must be a TCP port \(0-65535\), not 'x'\nusage: npm start/],
  ])('%s %j', async (script, args, code, stderr) => {
    const outcome = await run(script, args);
    expect(outcome.code).toBe(code);
    expect(outcome.stderr).toMatch(stderr);
    expect(outcome.stderr).not.toMatch(STACK_TRACE);
  }, 30_000);
});
