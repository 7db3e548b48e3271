import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { READY_LINE } from '../../scripts/local/usage.js';
import { LOCAL_DIR_ENV, type LocalEndpoints, localPaths } from './local-state.js';

export interface StackChildOptions {
  /** The project root, where `npm start` runs. */
  root: string;
  /** Its environment: `TRACE_INGEST_LOCAL_DIR` names the state directory, `PORT` the port (0: a free one). */
  env: NodeJS.ProcessEnv;
  /** Default `npm start`; `tsx scripts/local/start.ts` is the same stack without npm's process in front. */
  command?: readonly [string, ...string[]];
  /** In a process group of its own, so that `kill(-pid)` reaches every process of it. */
  detached?: boolean;
  timeoutMs: number;
  /** Every chunk of its stdout and stderr. */
  onOutput?: (text: string) => void;
}

export interface StackChild {
  child: ChildProcess;
  endpoints: LocalEndpoints;
  /** Everything it printed so far. */
  output: () => string;
}

/**
 * The local stack (scripts/local/start.ts) in a process of its own, resolved once it is ready: `endpoints.json`
 * written and the banner printed. The stack writes the file before it prints the banner (with the demo keys), so
 * a reader of the banner who waits for the file alone races it (seen on a loaded machine: the keys were not yet
 * printed). A stale `endpoints.json` of an earlier start on the same state is removed first.
 */
export async function startStackChild(options: StackChildOptions): Promise<StackChild> {
  const file = localPaths(options.env[LOCAL_DIR_ENV]).endpoints;
  rmSync(file, { force: true });
  const [command, ...args] = options.command ?? ['npm', 'start'];
  const child = spawn(command, args, { cwd: options.root, env: options.env, detached: options.detached ?? false, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    output += text;
    options.onOutput?.(text);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const deadline = Date.now() + options.timeoutMs;
  while (!(output.includes(READY_LINE) && existsSync(file))) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the local stack exited with ${child.signalCode ?? child.exitCode}\n${output}`);
    if (Date.now() > deadline) {
      // Not left running behind a caller that never got its handle.
      if (child.pid !== undefined) process.kill(options.detached ? -child.pid : child.pid, 'SIGKILL');
      throw new Error(`the local stack was not ready after ${options.timeoutMs / 1000} s\n${output}`);
    }
    await sleep(250);
  }
  return { child, endpoints: JSON.parse(readFileSync(file, 'utf8')) as LocalEndpoints, output: () => output };
}
