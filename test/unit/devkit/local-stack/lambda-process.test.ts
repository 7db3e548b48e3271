import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FunctionError, type LambdaProcess, startLambdaProcess } from '../../../../devkit/local-stack/lambda-process.js';

// A handler that reports how many invocations its process was running at once.
const HANDLER = `
let inFlight = 0;
let most = 0;
export const handler = async (event) => {
  inFlight++;
  most = Math.max(most, inFlight);
  await new Promise((resolve) => setTimeout(resolve, event.ms));
  inFlight--;
  return { pid: process.pid, most };
};
`;

describe('the bundled sandbox runs each invocation in an environment of its own, as Lambda does', () => {
  let assetDir: string;
  let fn: LambdaProcess;
  beforeAll(async () => {
    assetDir = mkdtempSync(path.join(tmpdir(), 'lambda-process-test-'));
    writeFileSync(path.join(assetDir, 'index.mjs'), HANDLER);
    fn = await startLambdaProcess({ functionName: 'probe', assetDir, handler: 'index.handler', environment: {}, timeoutSeconds: 1, memorySize: 128, region: 'us-east-1' });
  }, 30_000);
  afterAll(async () => {
    await fn.stop();
    rmSync(assetDir, { recursive: true, force: true });
  });

  it('never runs two invocations in one process at once: concurrent ones get more processes', async () => {
    const results = await Promise.all([1, 2, 3].map(() => fn.invoke<{ pid: number; most: number }>({ ms: 300 })));
    expect(results.map((r) => r.most)).toEqual([1, 1, 1]);
    expect(new Set(results.map((r) => r.pid)).size).toBe(3);
  }, 30_000);

  it('kills only the timed-out invocation: one running beside it still answers', async () => {
    const [timedOut, onTime] = await Promise.allSettled([fn.invoke({ ms: 5_000 }), fn.invoke<{ most: number }>({ ms: 200 })]);
    expect(timedOut.status === 'rejected' && timedOut.reason instanceof FunctionError && timedOut.reason.errorType).toBe('Sandbox.Timedout');
    expect(onTime).toMatchObject({ status: 'fulfilled', value: { most: 1 } });
  }, 30_000);
});
