import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { freePort } from '../../devkit/engines/engines.js';
import { type LocalEndpoints, localPaths } from '../../devkit/local-stack/local-state.js';
import { groupAlive, NpmStart, waitFor } from '../support/npm-start.js';
import { readmeExamples } from '../support/readme-examples.js';

// `npm start` as a user runs it, driven over HTTP and through the admin CLI and `npm run query`.

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');

let stateDir: string;
let env: NodeJS.ProcessEnv;
let stack: NpmStart;
let endpoints: LocalEndpoints;
/** Everything npm start printed so far. */
const output = () => stack.output;

const admin = (...args: string[]) => stack.admin(...args);

async function adminFailure(...args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    await run('npm', ['run', '--silent', 'admin', '--', ...args], { cwd: ROOT, env });
  } catch (error) {
    const failed = error as { code: number; stderr: string };
    return { code: failed.code, stderr: failed.stderr };
  }
  throw new Error(`admin ${args.join(' ')} succeeded`);
}

const query = (sql: string) => stack.query(sql);

function trace(overrides: Record<string, unknown> = {}) {
  const now = new Date().toISOString();
  return {
    trace_id: randomUUID(),
    timestamp: now,
    root_span_name: 'agent',
    spans: [{ span_id: randomUUID(), timestamp: now, name: 'plan', kind: 'chain' }],
    ...overrides,
  };
}

async function ingest(apiKey: string, body: unknown, options: { gzip?: boolean } = {}) {
  const json = Buffer.from(JSON.stringify(body));
  const response = await fetch(`${endpoints.api}/v1/traces/ingest`, {
    method: 'POST',
    headers: {
      'X-API-Key': apiKey,
      'Content-Type': 'application/json',
      ...(options.gzip ? { 'Content-Encoding': 'gzip' } : {}),
    },
    body: options.gzip ? gzipSync(json) : json,
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  stateDir = mkdtempSync(path.join(tmpdir(), 'local-stack-test-'));
  stack = NpmStart.forState(stateDir, await freePort());
  // Each engine on a port chosen here, as DYNAMODB_PORT, KINESIS_PORT and S3_PORT let a user choose them.
  Object.assign(stack.env, { DYNAMODB_PORT: String(await freePort()), KINESIS_PORT: String(await freePort()), S3_PORT: String(await freePort()) });
  env = stack.env;
  endpoints = await stack.start();
}, 120_000);

afterAll(async () => {
  await stack?.kill9();
  rmSync(stateDir, { recursive: true, force: true });
});

describe('the README, run as written against the local stack', () => {
  const examples = readmeExamples();
  const bash = (script: string, cwd = ROOT, extra: NodeJS.ProcessEnv = {}) => run('bash', ['-euo', 'pipefail', '-c', script], { cwd, env: { ...env, ...extra } });
  /**
   * The README's commands source `.local/demo.env`, which this stack writes to its own state directory: nothing else
   * of them is changed, so a command that named a port or a key of its own would miss this stack's.
   */
  const onThisStack = (script: string) => {
    expect(script).toMatch(/^source \.local\/demo\.env\b/m);
    return script.replaceAll('source .local/demo.env', `source '${stack.paths.demoEnv}'`);
  };

  it('"Then, in another terminal": the curl answers as the README says, and the query shows the trace', async () => {
    const { stdout } = await bash(onThisStack(examples.tryIt.curl));
    expect(stdout.trim()).toBe(examples.tryIt.answer);
    const shown = await waitFor(
      'the README query to show the trace',
      async () => {
        const { stdout: table } = await bash(examples.tryIt.query);
        return table.includes('hello') ? table : undefined;
      },
      60_000,
    );
    expect(shown).toMatch(/trace_id\s+\|\s+root_span_name\s+\|\s+span_count/);
  }, 90_000);

  it('the curl fails when every trace is rejected, though the answer is a 200 that curl -f passes', async () => {
    const allRejected = onThisStack(examples.tryIt.curl).replaceAll('$(date -u +%Y-%m-%dT%H:%M:%SZ)', '2000-01-01T00:00:00Z');
    await expect(bash(allRejected)).rejects.toMatchObject({ code: 1, stdout: '' });
    const curlAlone = allRejected.replace(/curl -s /, 'curl -sf ').replace(/ \| grep .*$/m, '');
    const { stdout } = await bash(curlAlone);
    expect(JSON.parse(stdout)).toMatchObject({ accepted: 0, rejected: 1 });
  });

  it('the "Query" block: asking by the tag the curl sent finds its trace, and the spans query answers', async () => {
    const [byTag, spans] = examples.queries as [string, string];
    expect(examples.queries).toHaveLength(2);
    const { stdout: tagged } = await bash(byTag);
    expect(tagged).toMatch(/root_span_name/);
    expect(tagged).toContain('hello');
    const { stdout: rows } = await bash(spans);
    expect(rows).toContain('llm-call');
  }, 60_000);

  it('the admin block: a plan, an organization on it with an override, a key and its usage', async () => {
    const { stdout } = await bash(examples.admin);
    const documents = stdout.split(/\n(?=\{)/).map((text) => JSON.parse(text) as Record<string, unknown>);
    expect(documents.map((document) => Object.keys(document)[0])).toEqual(['plan', 'org_id', 'key_id', 'org_id']);
    expect(documents[1]).toMatchObject({ plan: 'team', overrides: { minute: 100 }, quotas: { minute: 100, hour: 20_000, day: 200_000, month: null } });
    expect(documents[3]).toMatchObject({ windows: [{ window: 'minute', quota: 100, used: 0, remaining: 100 }, { window: 'hour' }, { window: 'day' }, { window: 'month', quota: null }] });
  }, 60_000);

  it('the OpenTelemetry example, saved under its file name and run with the README\'s variables, lands its span', async () => {
    const versions = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).devDependencies as Record<string, string>;
    // The packages the README installs are the ones this repository tests with (npm install itself needs the network).
    expect(examples.otel.install).toMatch(/^npm init -y && npm install /);
    for (const [, name, version] of examples.otel.install.matchAll(/(@opentelemetry\/[a-z-]+)@([\d.]+)/g)) expect(versions[name as string]).toMatch(new RegExp(`^${(version as string).replaceAll('.', '\\.')}\\.`));
    // A directory inside the repository, not the README's beside it, so Node resolves the packages from its node_modules as it would from the user's.
    expect(examples.otel.directory).toMatch(/^mkdir \.\.\/([\w-]+) && cd \.\.\/\1$/);
    const dir = path.join(ROOT, `.readme-example-${randomUUID().slice(0, 8)}`);
    mkdirSync(dir);
    try {
      // What the README's `npm init -y` writes: no "type", so a .js file would be CommonJS there (and fail), as for the user.
      writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'otel-demo', version: '1.0.0', main: 'index.js' }));
      writeFileSync(path.join(dir, examples.otel.fileName), examples.otel.code);
      const { stdout } = await bash(`${onThisStack(examples.otel.environment)}\n${examples.otel.run}`, dir);
      expect(stdout.trim()).toBe('sent');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const spans = await waitFor(
      'the OpenTelemetry span to land',
      async () => {
        const found = await query("SELECT name, model, input_tokens, output_tokens FROM spans WHERE name = 'chat gpt-4o'");
        return found.length > 0 ? found : undefined;
      },
      60_000,
    );
    expect(spans[0]).toEqual({ name: 'chat gpt-4o', model: 'gpt-4o', input_tokens: 120, output_tokens: 30 });
  }, 90_000);
});

describe('npm start', () => {
  const orgId = `e2e-${Date.now()}`;
  const keys: Record<'org' | 'workspace', { key_id: string; api_key: string }> = {} as never;
  const sent: string[] = [];

  it('prints the demo keys and serves the API on PORT, and each engine on the port its variable names', () => {
    expect(endpoints.api).toBe(`http://127.0.0.1:${env.PORT}`);
    expect([endpoints.dynamodb, endpoints.kinesis, endpoints.s3]).toEqual([env.DYNAMODB_PORT, env.KINESIS_PORT, env.S3_PORT].map((port) => `http://127.0.0.1:${port}`));
    expect(output()).toMatch(/organization key\s+tik_[A-Za-z0-9_-]{43}/);
  });

  it('writes the demo key and its URLs to demo.env (mode 0600), which a shell can source', async () => {
    const demoKey = /organization key\s+(tik_[A-Za-z0-9_-]{43})/.exec(output())?.[1];
    expect(demoKey).toBeDefined();
    expect(statSync(stack.paths.demoEnv).mode & 0o777).toBe(0o600);
    await expect(stack.sourcedDemoEnv()).resolves.toEqual({
      TRACE_INGEST_API_KEY: demoKey,
      TRACE_INGEST_BASE_URL: `http://127.0.0.1:${env.PORT}`,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${env.PORT}/otel`,
      OTEL_EXPORTER_OTLP_HEADERS: `X-API-Key=${demoKey}`,
    });
    expect(output()).toContain(`source ${stack.paths.demoEnv}`);
  });

  it('provisions an organization with small quotas, a workspace and two keys through the admin CLI', async () => {
    await expect(admin('org', 'create', '--org', orgId, '--per-minute', '5', '--per-month', 'none')).resolves.toMatchObject({
      org_id: orgId,
      plan_status: 'active',
      quotas: { minute: 5, month: null },
    });
    await admin('workspace', 'create', '--org', orgId, '--slug', 'prod');
    keys.org = (await admin('key', 'create', '--org', orgId, '--name', 'e2e')) as never;
    keys.workspace = (await admin('key', 'create', '--org', orgId, '--workspace', 'prod')) as never;
    expect(keys.workspace).toMatchObject({ scope: 'workspace', workspace_slug: 'prod', api_key: expect.stringMatching(/^tik_/) });

    const listed = await admin('key', 'list', '--org', orgId);
    expect(listed.keys).toHaveLength(2);
    expect(JSON.stringify(listed)).not.toContain(keys.org.api_key);
  });

  it('reports admin errors with a non-zero exit and one line on stderr', async () => {
    const failure = await adminFailure('org', 'create', '--org', orgId);
    expect(failure.code).not.toBe(0);
    expect(failure.stderr.trim().split('\n')).toEqual([`admin: organization ${orgId} already exists`]);
  });

  it('accepts a plain JSON batch and a gzip batch', async () => {
    const plain = trace();
    const gzipped = trace({ workspace_slug: 'prod' });
    sent.push(plain.trace_id, gzipped.trace_id);

    const first = await ingest(keys.org.api_key, { traces: [plain] });
    expect(first).toMatchObject({ status: 200, body: { accepted: 1, rejected: 0, errors: [] } });
    expect(first.headers.get('x-request-id')).toBeTruthy();
    await expect(ingest(keys.workspace.api_key, { traces: [gzipped] }, { gzip: true })).resolves.toMatchObject({
      status: 200,
      body: { accepted: 1, rejected: 0 },
    });
  });

  it('lands both traces and their spans as Parquet that npm run query reads back', async () => {
    const rows = await waitFor(
      'the landed traces',
      async () => {
        const found = await query(`SELECT trace_id, workspace_slug, span_count FROM traces WHERE org_id = '${orgId}' ORDER BY workspace_slug`);
        return found.length === 2 ? found : undefined;
      },
      60_000,
    );
    expect(rows.map((row) => row.trace_id).sort()).toEqual([...sent].sort());
    expect(rows.map((row) => row.workspace_slug)).toEqual(['', 'prod']);
    const spans = await query(`SELECT name, kind FROM spans WHERE org_id = '${orgId}'`);
    expect(spans).toEqual([
      { name: 'plan', kind: 'chain' },
      { name: 'plan', kind: 'chain' },
    ]);
  }, 90_000);

  it('answers 429 with Retry-After when a batch alone exceeds the minute quota', async () => {
    const response = await ingest(keys.org.api_key, { traces: Array.from({ length: 6 }, () => trace()) });
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('60');
    expect(response.body).toMatchObject({ code: 'batch_exceeds_quota', window: 'minute', limit: 5 });
    expect(response.body.detail).toMatch(/^Rate limit exceeded/);
  });

  it('answers 403 for a workspace outside the key scope', async () => {
    const response = await ingest(keys.workspace.api_key, { traces: [trace({ workspace_slug: 'staging' })] });
    expect(response).toMatchObject({ status: 403, body: { code: 'workspace_out_of_scope' } });
  });

  it('answers 402 while billing is past due and 403 without an active plan', async () => {
    await admin('org', 'update', '--org', orgId, '--billing', 'past_due');
    const unpaid = await ingest(keys.org.api_key, { traces: [trace()] });
    expect(unpaid).toMatchObject({ status: 402, body: { code: 'payment_required' } });
    expect(unpaid.body.detail).toMatch(/^Payment required/);

    await admin('org', 'update', '--org', orgId, '--billing', 'ok', '--plan-status', 'inactive');
    const inactive = await ingest(keys.org.api_key, { traces: [trace()] });
    expect(inactive).toMatchObject({ status: 403, body: { code: 'no_active_plan' } });
    expect(inactive.body.detail).toMatch(/^Organization has no active plan/);
    await admin('org', 'update', '--org', orgId, '--plan-status', 'active');
  });

  it('answers 401 for an unknown key and for a revoked one', async () => {
    await expect(ingest(`tik_${'x'.repeat(43)}`, { traces: [trace()] })).resolves.toMatchObject({ status: 401, body: { code: 'invalid_api_key' } });
    await expect(admin('key', 'revoke', '--key-id', keys.org.key_id)).resolves.toMatchObject({ status: 'revoked' });
    await expect(ingest(keys.org.api_key, { traces: [trace()] })).resolves.toMatchObject({ status: 401, body: { code: 'invalid_api_key' } });
  });

  it('answers 404 for another path and for another method, as JSON, as the deployed API does', async () => {
    const missing = await fetch(`${endpoints.api}/v1/nope`);
    expect(missing.status).toBe(404);
    await expect(missing.json()).resolves.toMatchObject({ code: 'not_found' });
    const wrongMethod = await fetch(`${endpoints.api}/v1/traces/ingest`);
    expect(wrongMethod.status).toBe(404);
    await expect(wrongMethod.json()).resolves.toMatchObject({ code: 'not_found' });
  });

  it('stops on SIGTERM, leaving no process and no listening port behind', async () => {
    const pgid = stack.pid as number;
    process.kill(-pgid, 'SIGTERM');
    await waitFor('every process of npm start to exit', () => (groupAlive(pgid) ? undefined : true), 30_000);
    expect(output()).toContain('[local] stopped');
    expect(existsSync(localPaths(stateDir).endpoints)).toBe(false);
    expect(existsSync(localPaths(stateDir).demoEnv)).toBe(false);
    for (const endpoint of [endpoints.api, endpoints.dynamodb, endpoints.kinesis, endpoints.s3]) {
      await expect(fetch(endpoint)).rejects.toThrow();
    }
  }, 40_000);
});
