import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { RATE_TABLE, TENANCY_TABLE } from '../../lambda/shared/tables.js';

/** Environment variable that moves the local stack's state directory away from `./.local`. */
export const LOCAL_DIR_ENV = 'TRACE_INGEST_LOCAL_DIR';

/** Resource names of the local stack; the tables are named after their shared definitions. */
export const LOCAL_NAMES = {
  tables: { tenancy: `local-${TENANCY_TABLE.logicalName}`, rate: `local-${RATE_TABLE.logicalName}` },
  stream: 'local-traces',
  streamShards: 2,
  bucket: 'local-trace-data',
} as const;

/** What tools need to reach a running local stack: the content of `endpoints.json`. */
export interface LocalEndpoints {
  api: string;
  region: string;
  dynamodb: string;
  kinesis: string;
  s3: string;
  bucket: string;
  tables: { tenancy: string; rate: string };
  stream: string;
  /** Directory under which s3rver keeps the bucket's objects (`<s3Directory>/<bucket>/<key>._S3rver_object`). */
  s3Directory: string;
  /** Process id of `npm start`. */
  pid: number;
}

/** Where the local stack keeps its state. */
export interface LocalPaths {
  root: string;
  dynamodb: string;
  kinesis: string;
  s3: string;
  endpoints: string;
  demoKeys: string;
  /** The demo key and URLs as shell variables, for `source`: written while the stack serves. */
  demoEnv: string;
  checkpoints: string;
}

export function localPaths(root: string = process.env[LOCAL_DIR_ENV] || path.join(process.cwd(), '.local')): LocalPaths {
  const dir = path.resolve(root);
  return {
    root: dir,
    dynamodb: path.join(dir, 'dynamodb'),
    kinesis: path.join(dir, 'kinesis'),
    s3: path.join(dir, 's3'),
    endpoints: path.join(dir, 'endpoints.json'),
    demoKeys: path.join(dir, 'demo-keys.json'),
    demoEnv: path.join(dir, 'demo.env'),
    checkpoints: path.join(dir, 'checkpoints.json'),
  };
}

export class LocalStackNotRunningError extends Error {
  override name = 'LocalStackNotRunningError';
}

export function readJsonFile<T>(file: string): T | undefined {
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

/** Writes through a temporary file, so a reader never sees half a document. */
export function writeTextFile(file: string, text: string, mode = 0o644): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode });
  renameSync(temporary, file);
}

export function writeJsonFile(file: string, value: unknown, mode = 0o644): void {
  writeTextFile(file, `${JSON.stringify(value, null, 2)}\n`, mode);
}

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The endpoints of the running local stack, or a clear error when it is not running. */
export function readLocalEndpoints(paths: LocalPaths = localPaths()): LocalEndpoints {
  const endpoints = readJsonFile<LocalEndpoints>(paths.endpoints);
  if (!endpoints || !isProcessAlive(endpoints.pid)) {
    throw new LocalStackNotRunningError(`the local stack is not running (no live ${paths.endpoints}); start it with npm start`);
  }
  return endpoints;
}

export function removeFile(file: string): void {
  rmSync(file, { force: true });
}
