import { type ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * Lambda's Node.js runtime reduced to what a handler can observe: it imports the module `_HANDLER`
 * names from `LAMBDA_TASK_ROOT` once (the cold start; an import error fails every invocation, as
 * `Runtime.ImportModuleError` does), then runs one invocation at a time with a context whose
 * deadline is the function's timeout. Written into the sandbox as a file of its own, so nothing of
 * the repository is on its resolution path.
 */
const BOOTSTRAP = `
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const spec = process.env._HANDLER ?? '';
const dot = spec.lastIndexOf('.');
const base = path.join(process.env.LAMBDA_TASK_ROOT ?? '', spec.slice(0, dot));
const exportName = spec.slice(dot + 1);
let handler;
let initError;
try {
  const file = ['.mjs', '.js', '.cjs'].map((ext) => base + ext).find((candidate) => existsSync(candidate));
  if (file === undefined) throw Object.assign(new Error('Cannot find module ' + base), { name: 'Runtime.ImportModuleError' });
  const module = await import(pathToFileURL(file).href);
  handler = module[exportName];
  if (typeof handler !== 'function') throw Object.assign(new Error(spec + ' is undefined or not exported'), { name: 'Runtime.HandlerNotFound' });
} catch (error) {
  initError = error;
}
const shape = (error) => ({ errorType: error?.name ?? 'Error', errorMessage: error?.message ?? String(error) });
process.on('message', async ({ id, event, requestId, deadline }) => {
  if (initError) return process.send({ id, error: shape(initError) });
  const context = {
    callbackWaitsForEmptyEventLoop: true,
    functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: process.env.AWS_LAMBDA_FUNCTION_VERSION,
    invokedFunctionArn: 'arn:aws:lambda:' + process.env.AWS_REGION + ':000000000000:function:' + process.env.AWS_LAMBDA_FUNCTION_NAME,
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    awsRequestId: requestId,
    logGroupName: process.env.AWS_LAMBDA_LOG_GROUP_NAME,
    logStreamName: process.env.AWS_LAMBDA_LOG_STREAM_NAME,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
  try {
    const result = await handler(event, context);
    process.send({ id, result: result === undefined ? null : result });
  } catch (error) {
    process.send({ id, error: shape(error) });
  }
});
// The sandbox goes when whoever invokes it goes (a killed npm start leaves no function process behind).
process.on('disconnect', () => process.exit(0));
process.send({ ready: true });
`;

/** A function error as Lambda reports it to the caller (`X-Amz-Function-Error`). */
export class FunctionError extends Error {
  override name = 'FunctionError';
  constructor(
    readonly errorType: string,
    message: string,
  ) {
    super(`${errorType}: ${message}`);
  }
}

export interface LambdaProcessOptions {
  functionName: string;
  /** The bundle directory, copied into the sandbox's task root. */
  assetDir: string;
  /** `file.export`, from the template. */
  handler: string;
  /** The function's own environment (the template's, resolved), plus whatever reaches the local engines. */
  environment: Record<string, string>;
  timeoutSeconds: number;
  memorySize: number;
  region: string;
  /** Lines the function writes to stdout or stderr. */
  log?: (line: string) => void;
}

/** One function running as Lambda runs it: its bundle in fresh Node 24 processes, each invoked one event at a time. */
export interface LambdaProcess {
  /** Where the bundle was copied: outside the repository, so no `node_modules` is reachable from it. */
  readonly taskRoot: string;
  invoke<T = unknown>(event: unknown): Promise<T>;
  stop(): Promise<void>;
}

/** The Node the Lambdas deploy on: this process if it is Node 24, else the `node` devDependency. */
export function lambdaNodeBinary(): string {
  if (process.versions.node.startsWith('24.')) return process.execPath;
  return path.join(process.cwd(), 'node_modules', 'node', 'bin', 'node');
}

/**
 * The variables Lambda sets itself (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime).
 * Credentials are the local engines' and so is the region; nothing else of this process is passed on.
 */
function lambdaVariables(options: LambdaProcessOptions, taskRoot: string, runtimeDir: string): Record<string, string> {
  return {
    _HANDLER: options.handler,
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
    AWS_LAMBDA_FUNCTION_NAME: options.functionName,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(options.memorySize),
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${options.functionName}`,
    AWS_LAMBDA_LOG_STREAM_NAME: 'local',
    AWS_LAMBDA_LOG_FORMAT: 'JSON',
    AWS_REGION: options.region,
    AWS_DEFAULT_REGION: options.region,
    LAMBDA_TASK_ROOT: taskRoot,
    LAMBDA_RUNTIME_DIR: runtimeDir,
    LANG: 'en_US.UTF-8',
    TZ: ':UTC',
    PATH: '/usr/local/bin:/usr/bin:/bin',
  };
}

/** A bound on the function's execution environments here (Lambda's own is the account's concurrency); more invocations wait. */
const MAX_ENVIRONMENTS = 8;

/** One execution environment: a process that runs one invocation at a time, as Lambda's do. */
interface Environment {
  readonly process: ChildProcess;
  call?: { id: string; settle: (error: Error | undefined, value?: unknown) => void };
}

/**
 * Starts a function from its bundle the way Lambda does: the bundle copied into a sandbox directory
 * outside the repository, a fresh Node 24 process that imports the handler the template names, and
 * an environment of only the function's variables and Lambda's own. Each process runs one invocation
 * at a time; an invocation that finds every process busy gets a new one, a cold start, as Lambda
 * scales out (https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html), up to
 * {@link MAX_ENVIRONMENTS}, past which it waits. An invocation past the timeout kills its process
 * (Lambda stops that sandbox), and no other.
 */
export async function startLambdaProcess(options: LambdaProcessOptions): Promise<LambdaProcess> {
  const sandbox = mkdtempSync(path.join(tmpdir(), `lambda-${options.functionName}-`));
  const taskRoot = path.join(sandbox, 'task');
  const runtimeDir = path.join(sandbox, 'runtime');
  cpSync(options.assetDir, taskRoot, { recursive: true });
  mkdirSync(runtimeDir);
  const bootstrap = path.join(runtimeDir, 'bootstrap.mjs');
  writeFileSync(bootstrap, BOOTSTRAP);
  const env = { ...options.environment, ...lambdaVariables(options, taskRoot, runtimeDir) };
  const log = options.log ?? (() => undefined);

  const environments = new Set<Environment>();
  const idle: Environment[] = [];
  const waiting: ((environment: Environment) => void)[] = [];
  let starting = 0;

  const spawn = () =>
    new Promise<Environment>((resolve, reject) => {
      // execArgv: [] — fork passes this process's own flags on by default, and under npm start those load tsx:
      // a bundle that imports what only tsx resolves would run here and fail on Lambda.
      const started = fork(bootstrap, [], { cwd: taskRoot, env, execPath: lambdaNodeBinary(), execArgv: [], stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
      const environment: Environment = { process: started };
      for (const stream of [started.stdout, started.stderr]) {
        stream?.setEncoding('utf8');
        stream?.on('data', (text: string) => text.split('\n').filter((line) => line !== '').forEach(log));
      }
      started.on('message', (message: { ready?: boolean; id?: string; result?: unknown; error?: { errorType: string; errorMessage: string } }) => {
        if (message.ready) {
          environments.add(environment);
          return resolve(environment);
        }
        const call = environment.call;
        if (!call || message.id !== call.id) return;
        environment.call = undefined;
        call.settle(message.error ? new FunctionError(message.error.errorType, message.error.errorMessage) : undefined, message.result);
        release(environment);
      });
      started.once('exit', (code, signal) => {
        environments.delete(environment);
        const at = idle.indexOf(environment);
        if (at >= 0) idle.splice(at, 1);
        environment.call?.settle(new FunctionError('Runtime.ExitError', `the ${options.functionName} process exited (${signal ?? code})`));
        environment.call = undefined;
        reject(new Error(`the ${options.functionName} process exited before it was ready (${signal ?? code})`));
        // A waiting invocation would otherwise wait for a release that this process will never make.
        if (waiting.length > 0) void acquireNew().then((next) => release(next), () => undefined);
      });
    });

  async function acquireNew(): Promise<Environment> {
    starting++;
    try {
      return await spawn();
    } finally {
      starting--;
    }
  }

  function acquire(): Promise<Environment> {
    const free = idle.pop();
    if (free) return Promise.resolve(free);
    if (environments.size + starting < MAX_ENVIRONMENTS) return acquireNew();
    return new Promise((resolve) => waiting.push(resolve));
  }

  function release(environment: Environment): void {
    if (!environments.has(environment)) return;
    const next = waiting.shift();
    if (next) next(environment);
    else idle.push(environment);
  }

  async function invoke<T>(event: unknown): Promise<T> {
    const environment = await acquire();
    const id = randomUUID();
    const timeoutMs = options.timeoutSeconds * 1000;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        environment.call = undefined;
        environment.process.kill('SIGKILL');
        reject(new FunctionError('Sandbox.Timedout', `Task timed out after ${options.timeoutSeconds} seconds`));
      }, timeoutMs);
      environment.call = {
        id,
        settle: (error, value) => {
          clearTimeout(timer);
          if (error) reject(error);
          else resolve(value as T);
        },
      };
      environment.process.send({ id, event, requestId: randomUUID(), deadline: Date.now() + timeoutMs });
    });
  }

  // The first environment at once: a bundle that cannot load fails here, not at the first request.
  idle.push(await acquireNew());
  return {
    taskRoot,
    invoke,
    async stop() {
      await Promise.all(
        [...environments].map((environment) => {
          if (environment.process.exitCode !== null) return undefined;
          const exited = new Promise((resolve) => environment.process.once('exit', resolve));
          environment.process.kill('SIGTERM');
          return exited;
        }),
      );
      rmSync(sandbox, { recursive: true, force: true });
    },
  };
}
