import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * Issue 37, item 1: CI's `npm test` died with exit code 139 in the integration project. A core dump of the
 * crashed jest process stopped in leveldown's `GetWorker::DoExecute`: kinesalite, in that process, was
 * stopped while its LevelDB store still had work coming (devkit/engines/leveldown-closed-guard.ts and
 * kinesalite-requests.ts). Both cases run in a child process, so that the crash they guard against is a
 * failed assertion here rather than the end of the runner.
 */
const FIXTURES = path.join(__dirname, '../fixtures/engines');

function runFixture(name: string, env: Record<string, string> = {}) {
  const child = spawnSync(process.execPath, ['--import', 'tsx', path.join(FIXTURES, name)], {
    encoding: 'utf8',
    // A warning on stderr is not a failure of what is tested here (the AWS SDK warns of Node versions it will drop).
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', NODE_NO_WARNINGS: '1', ...env },
    timeout: 180_000,
  });
  return { status: child.status, signal: child.signal, stdout: child.stdout, stderr: child.stderr };
}

describe('kinesalite stopped with work under way', () => {
  it('refuses every store operation after its close with an error, and the process lives', () => {
    const run = runFixture('leveldown-after-close.ts');
    expect({ status: run.status, signal: run.signal, stderr: run.stderr }).toEqual({ status: 0, signal: null, stderr: '' });
    const outcomes = JSON.parse(run.stdout) as Record<string, string>;
    expect(Object.keys(outcomes)).toEqual(['get', 'put', 'del', 'batch', 'chainedBatch', 'readStream']);
    for (const outcome of Object.values(outcomes)) expect(outcome).toBe('Database is not open');
  });

  it('stops in the middle of PutRecords and GetRecords on every shard without an uncaught error', () => {
    const run = runFixture('kinesalite-stopped-mid-request.ts', { ROUNDS: '10' });
    expect({ status: run.status, signal: run.signal, stderr: run.stderr }).toEqual({ status: 0, signal: null, stderr: '' });
    const { rounds, requests } = JSON.parse(run.stdout) as { rounds: number; requests: number };
    expect(rounds).toBe(10);
    // Requests were in flight: each of 12 clients (8 writers, 4 readers) sends at least one in each of 10 rounds. At
    // least, not more: on a slow machine a stop may come before any client's second request.
    expect(requests).toBeGreaterThanOrEqual(10 * 12);
  });

  it('stops right after a CreateStream, whose timer writes to the store after the answer, without a crash', () => {
    const run = runFixture('kinesalite-stopped-after-create.ts', { ROUNDS: '20' });
    expect({ status: run.status, signal: run.signal, stderr: run.stderr }).toEqual({ status: 0, signal: null, stderr: '' });
    expect(JSON.parse(run.stdout)).toEqual({ rounds: 20 });
  });

  it('guards the leveldown that kinesalite loads (one copy in node_modules)', () => {
    const fromKinesalite = createRequire(require.resolve('kinesalite')).resolve('leveldown');
    expect(fromKinesalite).toBe(require.resolve('leveldown'));
  });
});
