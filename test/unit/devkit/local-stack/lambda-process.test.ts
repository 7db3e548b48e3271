import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
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

describe('the bundled sandbox runs a bundle with plain Node, as Lambda does', () => {
  const ROOT = path.resolve(__dirname, '../../../..');
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'lambda-process-loader-'));
    mkdirSync(path.join(dir, 'bundle'));
    // Loads only under tsx (an enum: Node 24 strips types but does not transform them): what an incomplete bundle looks like.
    writeFileSync(path.join(dir, 'bundle', 'index.mjs'), "import { Answer } from './helper.ts';\nexport const handler = async () => ({ answer: Answer.Yes });\n");
    writeFileSync(path.join(dir, 'bundle', 'helper.ts'), 'export enum Answer { Yes = 42 }\n');
    // Started by tsx, as npm start starts the local stack: this process's own flags load tsx.
    writeFileSync(
      path.join(dir, 'invoke.mts'),
      `import { startLambdaProcess } from ${JSON.stringify(pathToFileURL(path.join(ROOT, 'devkit/local-stack/lambda-process.ts')).href)};
const fn = await startLambdaProcess({ functionName: 'loader', assetDir: ${JSON.stringify(path.join(dir, 'bundle'))}, handler: 'index.handler', environment: {}, timeoutSeconds: 5, memorySize: 128, region: 'us-east-1' });
const outcome = await fn.invoke({}).then((value) => ({ value }), (error: Error) => ({ error: error.message }));
await fn.stop();
console.log(JSON.stringify(outcome));
`,
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("does not inherit the parent's tsx loader: a bundle that works only under tsx fails as it would on Lambda", async () => {
    const { stdout } = await promisify(execFile)(path.join(ROOT, 'node_modules/.bin/tsx'), [path.join(dir, 'invoke.mts')], { cwd: ROOT });
    expect(JSON.parse(stdout.trim().split('\n').pop() ?? '')).toEqual({ error: expect.stringMatching(/enum is not supported/) });
  }, 60_000);
});
