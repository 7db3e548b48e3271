import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../scripts/local/engines.js';
import { LOCAL_DIR_ENV, type LocalEndpoints, localPaths } from '../../scripts/local/local-state.js';

// `npm start` as a user runs it, driven over HTTP and through the admin CLI and `npm run query`.

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');

let stateDir: string;
let env: NodeJS.ProcessEnv;
let stack: ChildProcess;
let output = '';
let endpoints: LocalEndpoints;

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n--- npm start output ---\n${output}`);
    await sleep(500);
  }
}

async function admin(...args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run('npm', ['run', '--silent', 'admin', '--', ...args], { cwd: ROOT, env });
  return JSON.parse(stdout) as Record<string, unknown>;
}

async function adminFailure(...args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    await run('npm', ['run', '--silent', 'admin', '--', ...args], { cwd: ROOT, env });
  } catch (error) {
    const failed = error as { code: number; stderr: string };
    return { code: failed.code, stderr: failed.stderr };
  }
  throw new Error(`admin ${args.join(' ')} succeeded`);
}

async function query(sql: string): Promise<Record<string, unknown>[]> {
  const { stdout } = await run('npm', ['run', '--silent', 'query', '--', '--json', sql], { cwd: ROOT, env });
  return JSON.parse(stdout) as Record<string, unknown>[];
}

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
  env = { ...process.env, [LOCAL_DIR_ENV]: stateDir, PORT: String(await freePort()), AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
  // Its own process group, so the test can stop it the way Ctrl-C stops a terminal's foreground job.
  stack = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = (chunk: Buffer) => {
    output += chunk.toString('utf8');
  };
  stack.stdout?.on('data', keep);
  stack.stderr?.on('data', keep);
  const file = localPaths(stateDir).endpoints;
  endpoints = await waitFor(
    'npm start to write endpoints.json',
    () => {
      if (stack.exitCode !== null) throw new Error(`npm start exited with ${stack.exitCode}\n${output}`);
      return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as LocalEndpoints) : undefined;
    },
    110_000,
  );
}, 120_000);

afterAll(async () => {
  if (stack?.pid !== undefined && groupAlive(stack.pid)) process.kill(-stack.pid, 'SIGKILL');
  rmSync(stateDir, { recursive: true, force: true });
});

describe('npm start', () => {
  const orgId = `e2e-${Date.now()}`;
  const keys: Record<'org' | 'workspace', { key_id: string; api_key: string }> = {} as never;
  const sent: string[] = [];

  it('prints the demo keys and serves the API on PORT', () => {
    expect(endpoints.api).toBe(`http://127.0.0.1:${env.PORT}`);
    expect(output).toMatch(/organization key\s+tik_[A-Za-z0-9_-]{43}/);
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
    expect(output).toContain('[local] stopped');
    expect(existsSync(localPaths(stateDir).endpoints)).toBe(false);
    for (const endpoint of [endpoints.api, endpoints.dynamodb, endpoints.kinesis, endpoints.s3]) {
      await expect(fetch(endpoint)).rejects.toThrow();
    }
  }, 40_000);
});
