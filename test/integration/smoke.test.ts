import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type LocalStack, startLocalStack } from '../../devkit/local-stack/local-stack.js';
import { localPaths } from '../../devkit/local-stack/local-state.js';
import { runSmoke, smokeReport } from '../../scripts/smoke/smoke-checks.js';
import { localSmokeTarget, type PreparedTarget } from '../../scripts/smoke/smoke-targets.js';

/** `npm run smoke -- --local`: the operator's first-deploy check, run against the local stack, DuckDB in Athena's place. */
describe('npm run smoke -- --local', () => {
  let stateDir: string;
  let stack: LocalStack;
  let prepared: PreparedTarget;

  beforeAll(async () => {
    stateDir = mkdtempSync(path.join(tmpdir(), 'smoke-'));
    const paths = localPaths(stateDir);
    stack = await startLocalStack({ paths, port: 0, compactionIntervalMs: 0, poller: { idlePollMs: 100, batchingWindowMs: 200 } });
    prepared = await localSmokeTarget({
      apiUrl: stack.endpoints.api,
      dynamodb: stack.endpoints.dynamodb,
      tenancyTable: stack.endpoints.tables.tenancy,
      landed: { s3Directory: paths.s3, bucket: stack.endpoints.bucket },
    });
  }, 120_000);

  afterAll(async () => {
    await prepared?.close();
    await stack?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('passes every check against a working stack, and says so', async () => {
    const checks = await runSmoke(prepared.target, { landingTimeoutMs: 30_000, pollIntervalMs: 500 });
    expect(checks.map((check) => [check.name, check.passed, check.passed ? '' : check.detail])).toEqual(checks.map((check) => [check.name, true, '']));
    expect(checks).toHaveLength(8);
    expect(smokeReport(checks)).toMatch(/All 8 checks passed\.$/);
  });

  it('says plainly what failed when the API does not answer', async () => {
    const checks = await runSmoke({ ...prepared.target, apiUrl: 'http://127.0.0.1:9' }, { landingTimeoutMs: 0 });
    expect(checks.filter((check) => !check.passed).map((check) => check.name)).toEqual(checks.map((check) => check.name));
    expect(smokeReport(checks)).toMatch(/FAIL {2}plain JSON batch accepted: 0 no answer/);
    expect(smokeReport(checks)).toMatch(/8 of 8 checks FAILED\.$/);
  });
});
