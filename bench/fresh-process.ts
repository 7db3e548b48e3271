import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Runs `script` with `args` in a fresh Node process (through tsx, from the project root, with `nodeFlags`), so that its
 * peak memory is its own, and returns the JSON it printed on its last line.
 */
export function inFreshProcess<T>(script: string, args: readonly string[], nodeFlags: readonly string[] = []): T {
  const result = spawnSync(process.execPath, [...nodeFlags, '--import', 'tsx', script, ...args], { cwd: root, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${path.basename(script)} ${args.join(' ')} failed: ${result.stderr}`);
  return JSON.parse(result.stdout.trim().split('\n').pop() ?? '') as T;
}
