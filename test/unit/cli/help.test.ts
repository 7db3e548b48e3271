import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { benchCommand, benchUsage } from '../../../bench/command-line.js';
import { adminCommand } from '../../../scripts/admin/admin-command.js';
import { COMMANDS, usageFor, USAGE as ADMIN_USAGE } from '../../../scripts/admin/run-command.js';
import type { Command } from '../../../scripts/cli/command-line.js';
import { compactCommand } from '../../../scripts/local/compact-command.js';
import { queryCommand } from '../../../scripts/local/query-command.js';
import { startCommand } from '../../../scripts/local/start-command.js';
import { COMPACT_USAGE, QUERY_USAGE, START_USAGE } from '../../../scripts/local/usage.js';
import { opsCommand } from '../../../scripts/ops/ops-command.js';
import { DESTROY_USAGE, OPS_USAGE } from '../../../scripts/ops/usage.js';
import { replayCommand } from '../../../scripts/replay/replay-command.js';
import { REPLAY_USAGE } from '../../../scripts/replay/replay-usage.js';
import { SMOKE_USAGE, smokeCommand } from '../../../scripts/smoke/smoke-command.js';
import { type CommandOutcome, runCommand } from '../../support/run-command.js';

// Each script's main hands its command to runAsMain: recorded here instead of run, so a test can hold the wiring.
const mockMains: Command[] = [];
jest.mock('../../../scripts/cli/command-line.js', () => ({
  ...jest.requireActual('../../../scripts/cli/command-line.js'),
  runAsMain: (command: Command) => mockMains.push(command),
}));

const ROOT = path.resolve(__dirname, '../../..');
const BENCH_DIR = path.join(ROOT, 'bench');
const STACK_TRACE = /^\s+at /m;

/** A command in-process, as its script runs it, with no local stack to find. */
const run = (command: Command, args: string[], env: Record<string, string> = {}): Promise<CommandOutcome> =>
  runCommand(command, args, { TRACE_INGEST_LOCAL_DIR: path.join(ROOT, '.no-such-local-stack'), ...env });
const bench: Command = (argv, out) => benchCommand(argv, out, BENCH_DIR);

/** A script in a process of its own, through tsx as npm runs it. */
async function spawnScript(args: string[]): Promise<CommandOutcome> {
  try {
    const { stdout, stderr } = await promisify(execFile)(path.join(ROOT, 'node_modules/.bin/tsx'), args, { cwd: ROOT });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('every command line prints its usage for --help, on stdout, with exit status 0', () => {
  it('start, compact, replay, query, ops, destroy and smoke', async () => {
    const cases: [string, Command, string[], string][] = [
      ['start', startCommand, [], START_USAGE],
      ['compact', compactCommand, [], COMPACT_USAGE],
      ['replay', replayCommand, [], REPLAY_USAGE],
      ['query', queryCommand, [], QUERY_USAGE],
      ['ops', opsCommand, [], OPS_USAGE],
      ['ops destroy', opsCommand, ['destroy'], DESTROY_USAGE],
      ['smoke', smokeCommand, [], SMOKE_USAGE],
    ];
    for (const [name, command, args, usage] of cases) {
      expect({ name, ...(await run(command, [...args, '--help'])) }).toEqual({ name, code: 0, stdout: usage, stderr: '' });
    }
    expect(SMOKE_USAGE).toMatch(/^usage: npm run smoke /);
  });

  it('bench: its usage with every registered group, and nothing run or written (bench/results.json unchanged)', async () => {
    const results = readFileSync(path.join(BENCH_DIR, 'results.json'));
    // As npm passes it: group options (`--concurrency 8`) go through to the groups; --help still reaches the usage.
    for (const args of [['--help'], ['ingest', '--concurrency', '8', '--help']]) {
      const outcome = await run(bench, args);
      expect(outcome).toEqual({ code: 0, stdout: expect.stringMatching(/^usage: npm run bench \[-- GROUP \.\.\.\]\n/), stderr: '' });
      expect(outcome.stdout).toMatch(/^Groups: ingest, landing, .*\bcost\b/m);
      expect(outcome.stdout).toBe(benchUsage(outcome.stdout.match(/^Groups: (.*)$/m)![1]!.split(', ')));
    }
    expect(readFileSync(path.join(BENCH_DIR, 'results.json')).equals(results)).toBe(true);
  });

  it('admin, a group and a command', async () => {
    for (const args of [[], ['org'], ['org', 'create']]) {
      expect({ args, ...(await run(adminCommand, [...args, '--help'])) }).toEqual({ args, code: 0, stdout: `${args.length === 0 ? ADMIN_USAGE : usageFor(args)}\n`, stderr: '' });
    }
  });

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

describe('each npm script runs its command', () => {
  it('the file every npm script names hands runAsMain the command whose usage its --help prints', async () => {
    const scripts = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    const expected: Record<string, [Command, string]> = {
      start: [startCommand, START_USAGE],
      admin: [adminCommand, `${ADMIN_USAGE}\n`],
      query: [queryCommand, QUERY_USAGE],
      compact: [compactCommand, COMPACT_USAGE],
      replay: [replayCommand, REPLAY_USAGE],
      smoke: [smokeCommand, SMOKE_USAGE],
      ops: [opsCommand, OPS_USAGE],
      destroy: [opsCommand, DESTROY_USAGE],
    };
    const mains = new Map<string, Command>();
    for (const [script, [command, usage]] of Object.entries(expected)) {
      const [, file, args = ''] = /\btsx (\S+)(.*)$/.exec(scripts[script] ?? '') ?? [];
      expect({ script, file }).toEqual({ script, file: expect.stringMatching(/^scripts\/.*\.ts$/) });
      if (!mains.has(file!)) {
        const before = mockMains.length;
        jest.requireActual(path.join(ROOT, file!));
        expect({ file, wired: mockMains.length - before }).toEqual({ file, wired: 1 });
        mains.set(file!, mockMains.at(-1)!);
      }
      expect({ script, same: mains.get(file!) === command }).toEqual({ script, same: true });
      expect({ script, ...(await run(command, [...args.split(' ').filter(Boolean), '--help'])) }).toEqual({ script, code: 0, stdout: usage, stderr: '' });
    }
  });

  // What only a real process shows: a main's exit status and streams (bench/run.ts, whose import.meta Jest cannot
  // load), and that every command's modules load as Node's ESM loader and tsx load them for npm.
  it('bench through a real process: an unknown group is exit status 2 and one line plus the usage on stderr', async () => {
    const outcome = await spawnScript(['bench/run.ts', 'ingest', 'bogus']);
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toMatch(/^bench: unknown group 'bogus'\nusage: npm run bench/);
    expect(outcome.stderr).not.toMatch(STACK_TRACE);
  }, 60_000);

  it('every command module loads under tsx as npm runs it', async () => {
    const modules = ['scripts/admin/admin-command.ts', 'scripts/ops/ops-command.ts', 'scripts/local/start-command.ts', 'scripts/local/compact-command.ts', 'scripts/local/query-command.ts', 'scripts/replay/replay-command.ts', 'scripts/smoke/smoke-command.ts', 'bench/command-line.ts'];
    const dir = mkdtempSync(path.join(tmpdir(), 'help-esm-'));
    try {
      const probe = path.join(dir, 'load.mts');
      const imports = modules.map((file) => `Object.entries(await import(${JSON.stringify(pathToFileURL(path.join(ROOT, file)).href)})).filter(([name, value]) => /Command$/.test(name) && typeof value === 'function').map(([name]) => name)`);
      writeFileSync(probe, `console.log(JSON.stringify([${imports.join(', ')}].flat()));\n`);
      const outcome = await spawnScript([probe]);
      expect({ code: outcome.code, stderr: outcome.stderr }).toEqual({ code: 0, stderr: '' });
      expect(JSON.parse(outcome.stdout)).toEqual(['adminCommand', 'opsCommand', 'startCommand', 'compactCommand', 'queryCommand', 'replayCommand', 'smokeCommand', 'benchCommand']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('a user error is one line and the usage on stderr, never a stack trace', () => {
  it('ops: an unknown command is refused before the stack, the region or credentials are looked at', async () => {
    const outcome = await run(opsCommand, ['bogus', '--stack', 'X'], { AWS_REGION: '', AWS_DEFAULT_REGION: '' });
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toMatch(/^ops: unknown command 'bogus'\nusage: npm run --silent ops/);
  });

  it('ops and destroy without AWS credentials: one line that names what to set', async () => {
    // No credentials anywhere the SDK looks: no variables, no files, no instance metadata.
    const nowhere = { AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_SESSION_TOKEN: '', AWS_PROFILE: '', AWS_SHARED_CREDENTIALS_FILE: '/nonexistent', AWS_CONFIG_FILE: '/nonexistent', AWS_EC2_METADATA_DISABLED: 'true' };
    const outcomes: CommandOutcome[] = [];
    for (const args of [['resources', '--stack', 'X', '--region', 'eu-west-1'], ['destroy', '--stack', 'X', '--region', 'eu-west-1']]) outcomes.push(await run(opsCommand, args, nowhere));
    expect(outcomes.map((o) => [o.code, o.stderr])).toEqual([
      [1, expect.stringMatching(/^ops: no AWS credentials: set AWS_PROFILE .* or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY .*\n$/)],
      [1, expect.stringMatching(/^destroy: no AWS credentials: set AWS_PROFILE/)],
    ]);
  }, 60_000);

  it('npm start with a PORT that is not a port', async () => {
    const outcome = await run(startCommand, [], { PORT: '80a' });
    expect(outcome.code).toBe(2);
    expect(outcome.stderr).toMatch(/^npm start: PORT must be a TCP port \(0-65535\), not '80a'\nusage: npm start/);
    expect(outcome.stderr).not.toMatch(STACK_TRACE);
  });

  it('npm start with an engine port another process holds: one line that names the setting, not the engine\'s bind error', async () => {
    const holder = createServer();
    const port = await new Promise<number>((resolve) => holder.listen(0, '127.0.0.1', () => resolve((holder.address() as { port: number }).port)));
    const state = mkdtempSync(path.join(tmpdir(), 'help-busy-port-'));
    try {
      const outcome = await run(startCommand, [], { S3_PORT: String(port), PORT: '0', TRACE_INGEST_LOCAL_DIR: state });
      expect(outcome.code).toBe(1);
      expect(outcome.stderr).toContain(`\nnpm start: port ${port} (S3_PORT or --s3-port) already in use by another process: choose another, or leave it unset for a free one\n`);
      expect(outcome.stderr).not.toMatch(STACK_TRACE);
    } finally {
      holder.close();
      rmSync(state, { recursive: true, force: true });
    }
  }, 90_000);

  it.each([
    ['replay', ['--local', '--shard', 's', '--from', 'abc', '--to', '1'], replayCommand, 2, /^replay: --from must be a Kinesis sequence number \(decimal digits\), not 'abc'\nusage: npm run replay/],
    ['replay', ['--nope'], replayCommand, 2, /^replay: Unknown option '--nope'/],
    ['replay', ['--failure', 'f.json', '--bucket', 'b', '--chunk-size', '-3'], replayCommand, 2, /^replay: --chunk-size must be a positive integer, not '-3'/],
    ['compact', ['--now'], compactCommand, 2, /^compact: Unknown option '--now'\nusage: npm run compact/],
    ['query', [], queryCommand, 2, /^query: no SQL given\nusage: npm run query/],
    ['admin', ['org', 'update', '--org', 'acme', '--per-minute', '-5'], adminCommand, 1, /^admin: --per-minute must be a whole number >= 0 or "none", or "plan" to follow the plan, not '-5'\n$/],
    ['ops', ['queue', 'purge', '--stack', 'S', '--region', 'eu-west-1', '--queue', 'failure'], opsCommand, 2, /^ops: queue purge deletes every message of the failure queue: add --yes/],
    ['admin', ['plan', 'create', '--plan', 'team', '--per-minute', 'lots'], adminCommand, 1, /^admin: --per-minute must be a whole number >= 0 or "none", not 'lots'\n$/],
    ['start', ['--port', '8080'], startCommand, 2, /^npm start: Unknown option '--port'/],
    ['bench', ['ingest', 'bogus'], bench, 2, /^bench: unknown group 'bogus'\nusage: npm run bench/],
    ['start', ['--s3-port', 'x'], startCommand, 2, /^npm start: --s3-port must be a TCP port \(0-65535\), not 'x'\nusage: npm start/],
  ])('%s %j', async (_name, args, command, code, stderr) => {
    const outcome = await run(command, args);
    expect(outcome.code).toBe(code);
    expect(outcome.stderr).toMatch(stderr);
    expect(outcome.stderr).not.toMatch(STACK_TRACE);
  });
});
