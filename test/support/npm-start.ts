import { type ChildProcess, execFile } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { LOCAL_DIR_ENV, type LocalEndpoints, type LocalPaths, localPaths } from '../../devkit/local-stack/local-state.js';
import { startStackChild } from '../../devkit/local-stack/stack-child.js';

const run = promisify(execFile);
export const ROOT = path.resolve(__dirname, '../..');

/** Polls `probe` every half second until it gives a value; throws with `context()` after `timeoutMs`. */
/** What `npm run compact` says when another compaction (the timer of `npm start`) holds the lock. */
export const COMPACTION_LOCK_HELD = 'another compaction is running';

export async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs: number, context = () => ''): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${context()}`);
    await sleep(500);
  }
}

/**
 * `npm start` as a user runs it, in its own process group (so it can be stopped like a terminal's
 * foreground job, or killed with SIGKILL) on a state directory that survives restarts.
 */
export class NpmStart {
  output = '';
  endpoints!: LocalEndpoints;
  private process: ChildProcess | undefined;

  constructor(readonly env: NodeJS.ProcessEnv) {}

  static forState(stateDir: string, port: number): NpmStart {
    return new NpmStart({ ...process.env, [LOCAL_DIR_ENV]: stateDir, PORT: String(port), AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' });
  }

  /** The files of the stack's state directory. */
  get paths(): LocalPaths {
    return localPaths(this.env[LOCAL_DIR_ENV]);
  }

  /** What `source <state>/demo.env` sets in a shell that had none of it: name → value. */
  async sourcedDemoEnv(): Promise<Record<string, string>> {
    const { stdout } = await run('bash', ['-euc', 'source "$1" && env -0', 'sourced', this.paths.demoEnv], { env: { PATH: process.env.PATH } });
    const variables = stdout.split('\0').filter(Boolean).map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]);
    return Object.fromEntries(variables.filter(([name]) => /^(TRACE_INGEST|OTEL)_/.test(name as string)));
  }

  /** The process group of the stack (npm's pid): signal `-pid` to reach every process of it. */
  get pid(): number | undefined {
    return this.process?.pid;
  }

  /** Starts the stack and resolves once it is ready: endpoints.json written and the banner, with the demo keys, printed. */
  async start(timeoutMs = 110_000): Promise<LocalEndpoints> {
    const started = await startStackChild({
      root: ROOT,
      env: this.env,
      detached: true,
      timeoutMs,
      onOutput: (text) => {
        this.output += text;
      },
    });
    this.process = started.child;
    this.endpoints = started.endpoints;
    return this.endpoints;
  }

  /** `kill -9` of every process of the stack, as a crash or an OOM kill would. */
  async kill9(): Promise<void> {
    const pgid = this.process?.pid;
    if (pgid === undefined || !groupAlive(pgid)) return;
    process.kill(-pgid, 'SIGKILL');
    await waitFor('the stack to die', () => (groupAlive(pgid) ? undefined : true), 10_000);
  }

  async admin(...args: string[]): Promise<Record<string, unknown>> {
    const { stdout } = await run('npm', ['run', '--silent', 'admin', '--', ...args], { cwd: ROOT, env: this.env });
    return JSON.parse(stdout) as Record<string, unknown>;
  }

  async query(sql: string): Promise<Record<string, unknown>[]> {
    const { stdout } = await run('npm', ['run', '--silent', 'query', '--', '--json', sql], { cwd: ROOT, env: this.env, maxBuffer: 256 * 1024 * 1024 });
    return JSON.parse(stdout) as Record<string, unknown>[];
  }

  /**
   * `npm run compact`, again while the compaction timer of `npm start` holds the compaction lock: the command refuses
   * to run beside it (by design), and which of the two gets the lock first is a race (seen failing sdk-delivery.test.ts
   * in CI). Any other failure is thrown at once.
   */
  async compact(timeoutMs = 120_000): Promise<string> {
    return waitFor(
      'npm run compact to get the compaction lock',
      async () => {
        try {
          return (await run('npm', ['run', '--silent', 'compact'], { cwd: ROOT, env: this.env, maxBuffer: 16 * 1024 * 1024 })).stdout;
        } catch (error) {
          if (String((error as { stderr?: string }).stderr).includes(COMPACTION_LOCK_HELD)) return undefined;
          throw error;
        }
      },
      timeoutMs,
    );
  }
}

export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}
