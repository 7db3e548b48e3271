import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** Small helpers shared by the benchmarks. */

/** User plus system CPU microseconds that `fn` took in this process. */
export function cpuMicros(fn: () => void): number {
  const start = process.cpuUsage();
  fn();
  const used = process.cpuUsage(start);
  return used.user + used.system;
}

/** {@link cpuMicros} for an async `fn`: CPU of everything this process ran until it settled. */
export async function cpuMicrosAsync(fn: () => Promise<unknown>): Promise<number> {
  const start = process.cpuUsage();
  await fn();
  const used = process.cpuUsage(start);
  return used.user + used.system;
}

export function round(value: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** The median of unsorted samples (the mean of the middle two for an even count). */
export function median(samples: readonly number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** Nearest-rank percentile of unsorted samples; 0 when there are none. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return 0;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

/** Runs `fn` and, whatever happens, the clean-ups registered during it, last registered first. */
export async function withCleanup<T>(fn: (defer: (cleanup: () => unknown) => void) => Promise<T>): Promise<T> {
  const cleanups: (() => unknown)[] = [];
  try {
    return await fn((cleanup) => cleanups.push(cleanup));
  } finally {
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup();
      } catch (error) {
        console.error('bench clean-up failed:', error);
      }
    }
  }
}

/** Rejects with `message` when `promise` has not settled within `ms`. */
export async function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(message)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The lines a child prints on its stdout (a pipe), one at a time; done when it closes. */
export function stdoutLines(child: ChildProcess): AsyncIterator<string> {
  return createInterface({ input: child.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
}

/** Settles once `child` has exited (at once if it has). */
export const exited = (child: ChildProcess) =>
  new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once('exit', resolve)));
