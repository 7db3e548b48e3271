import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { LOCAL_DIR_ENV, type LocalEndpoints, localPaths } from '../../devkit/local-stack/local-state.js';
import { READY_LINE } from '../../scripts/local/usage.js';

const run = promisify(execFile);
export const ROOT = path.resolve(__dirname, '../..');

/** Polls `probe` every half second until it gives a value; throws with `context()` after `timeoutMs`. */
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

  /** The process group of the stack (npm's pid): signal `-pid` to reach every process of it. */
  get pid(): number | undefined {
    return this.process?.pid;
  }

  /**
   * Starts the stack and resolves once it is ready: endpoints.json written and the banner, with the demo keys,
   * printed. The stack writes endpoints.json before the banner, so a test reading keys from `output` as soon
   * as the file exists races the banner (seen on a loaded machine: the keys were not yet printed).
   */
  async start(timeoutMs = 110_000): Promise<LocalEndpoints> {
    const file = localPaths(this.env[LOCAL_DIR_ENV]).endpoints;
    rmSync(file, { force: true });
    const child = spawn('npm', ['start'], { cwd: ROOT, env: this.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    this.process = child;
    const keep = (chunk: Buffer) => {
      this.output += chunk.toString('utf8');
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.endpoints = await waitFor(
      'npm start to write endpoints.json',
      () => {
        if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}\n${this.output}`);
        if (!this.output.includes(READY_LINE) || !existsSync(file)) return undefined;
        return JSON.parse(readFileSync(file, 'utf8')) as LocalEndpoints;
      },
      timeoutMs,
      () => this.output,
    );
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

  async compact(): Promise<string> {
    const { stdout } = await run('npm', ['run', '--silent', 'compact'], { cwd: ROOT, env: this.env, maxBuffer: 16 * 1024 * 1024 });
    return stdout;
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
