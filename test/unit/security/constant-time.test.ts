import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { InvalidApiKeyError } from '../../../lambda/ingest/core/errors.js';
import type { TenancyReader } from '../../../lambda/ingest/core/tenancy/ports.js';
import { authenticate } from '../../../lambda/ingest/core/tenancy/identify-caller.js';
import * as tenancy from '../../../lambda/shared/domain/tenancy.js';
import { type ApiKey, generateApiKeySecret, hashApiKey } from '../../../lambda/shared/domain/tenancy.js';
import { createHarness } from '../../support/ingest-harness.js';
import { buildBatch, gatewayEvent } from '../../../devkit/builders/trace-builders.js';

/**
 * Secret comparison is constant-time because there is none: a key is hashed (SHA-256) and looked up
 * by its hash with one GetItem, so no code compares a presented secret with a stored one; DynamoDB
 * matches the hash, whose bytes a caller cannot steer towards a stored one. These tests pin that: the
 * secret reaches only the form check and the hash, the store is asked only for the hash, the store's
 * answer alone decides, and no source file compares anything secret-like with `==`/`!=`/`===`/`!==`,
 * `startsWith`, `localeCompare` or `Buffer.compare`/`equals`.
 */
jest.mock('../../../lambda/shared/domain/tenancy.js', () => {
  const actual = jest.requireActual<typeof import('../../../lambda/shared/domain/tenancy.js')>('../../../lambda/shared/domain/tenancy.js');
  return { ...actual, isWellFormedApiKey: jest.fn(actual.isWellFormedApiKey), hashApiKey: jest.fn(actual.hashApiKey) };
});

const ROOT = path.resolve(__dirname, '../../..');
const SOURCE_DIRS = ['lambda', 'lib', 'bin', 'scripts'];

function sourceFiles(dir: string): string[] {
  const full = path.join(ROOT, dir);
  let entries: string[];
  try {
    entries = readdirSync(full);
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    const relative = path.join(dir, name);
    if (name === 'node_modules' || name === 'generated') return [];
    if (statSync(path.join(ROOT, relative)).isDirectory()) return sourceFiles(relative);
    return /\.(ts|mjs|js)$/.test(name) && !name.endsWith('.d.ts') ? [relative] : [];
  });
}

const SECRETISH = String.raw`[\w.$]*(?:secret|Secret|SECRET|apiKeyValue|x-api-key|X-API-Key|password|Password)[\w.$\]\[']*`;
/** Presence checks (`=== undefined`, `!== null`, `=== ''`) compare no secret. */
const PRESENCE_CHECK = /(?:===?|!==?)\s*(?:undefined|null|''|"")(?![\w$])|(?:undefined|null)\s*(?:===?|!==?)/g;
const COMPARISONS = [
  new RegExp(String.raw`${SECRETISH}\s*(?:===?|!==?)`),
  new RegExp(String.raw`(?:===?|!==?)\s*${SECRETISH}`),
  new RegExp(String.raw`${SECRETISH}\s*\.\s*(?:startsWith|endsWith|localeCompare|equals|includes)\s*\(`),
  new RegExp(String.raw`Buffer\.compare\s*\([^)]*(?:secret|Secret)`),
];

describe('secret comparison', () => {
  it('scans a non-trivial set of sources', () => {
    const files = sourceFiles('lambda');
    expect(files).toContain(path.join('lambda', 'ingest', 'core', 'tenancy', 'identify-caller.ts'));
    expect(files.length).toBeGreaterThan(20);
  });

  it('no source file compares a secret', () => {
    const offending: string[] = [];
    for (const file of SOURCE_DIRS.flatMap(sourceFiles)) {
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      text.split('\n').forEach((line, i) => {
        const code = line.replace(/\/\/.*$/, '').replace(PRESENCE_CHECK, ' ');
        if (COMPARISONS.some((pattern) => pattern.test(code))) offending.push(`${file}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(offending).toEqual([]);
  });

  it.each([
    ['an active', 'active' as const],
    ['a revoked', 'revoked' as const],
    ['an unknown', undefined],
  ])('asks the store for the SHA-256 of %s key, once, and hands the secret to nothing else', async (_name, status) => {
    const { secret } = generateApiKeySecret();
    const { reader, calls } = recordingReader(() => (status === undefined ? undefined : keyRecord(status)));
    const outcome = await authenticate(reader, [secret]).catch((error: unknown) => error);
    expect(outcome).toEqual(status === 'active' ? keyRecord('active') : expect.any(InvalidApiKeyError));
    expect(calls).toEqual([['getApiKeyByHash', [hashApiKey(secret)]]]);
    expect(JSON.stringify(calls)).not.toContain(secret);
  });

  it('lets the store\'s answer for the hash decide alone: no part of the presented secret is compared with the key record', async () => {
    // The record's display prefix is another secret's: a check of the secret against it would refuse.
    const record = { ...keyRecord('active'), displayPrefix: generateApiKeySecret().displayPrefix };
    const { reader } = recordingReader(() => record);
    const { secret } = generateApiKeySecret();
    await expect(authenticate(reader, [secret])).resolves.toBe(record);
  });

  it('at run time the secret goes to the form check and the hash, and the store sees only the hash', async () => {
    const h = await createHarness();
    const formCheck = jest.mocked(tenancy.isWellFormedApiKey);
    const hash = jest.mocked(tenancy.hashApiKey);
    formCheck.mockClear();
    hash.mockClear();
    const response = await h.invoke(gatewayEvent({ apiKey: h.orgKey, body: JSON.stringify(buildBatch(1)) }));
    expect(response.statusCode).toBe(200);
    expect(formCheck).toHaveBeenCalledWith(h.orgKey);
    expect(hash).toHaveBeenCalledWith(h.orgKey);
    expect(hash.mock.results[0]?.value).toMatch(/^[0-9a-f]{64}$/);
    // Nothing else received it: both were called with the secret once each.
    expect(formCheck.mock.calls.filter(([arg]) => arg === h.orgKey)).toHaveLength(1);
    expect(hash.mock.calls.filter(([arg]) => arg === h.orgKey)).toHaveLength(1);
  });
});

const keyRecord = (status: ApiKey['status']): ApiKey => ({
  keyId: 'key_1',
  orgId: 'acme',
  workspaceSlug: null,
  status,
  name: 'test',
  displayPrefix: 'tik_AAAAAAAA',
  createdAt: '2026-11-22T10:00:00.000Z',
});

/** A tenancy reader that answers key lookups with `answer` and records every call with its arguments. */
function recordingReader(answer: (secretHash: string) => ApiKey | undefined): { reader: TenancyReader; calls: [string, unknown[]][] } {
  const calls: [string, unknown[]][] = [];
  const reader: TenancyReader = {
    getApiKeyByHash: async (secretHash) => (calls.push(['getApiKeyByHash', [secretHash]]), answer(secretHash)),
    getOrganization: async (orgId) => (calls.push(['getOrganization', [orgId]]), undefined),
    getPlan: async (name) => (calls.push(['getPlan', [name]]), undefined),
    workspaceExists: async (orgId, slug) => (calls.push(['workspaceExists', [orgId, slug]]), false),
  };
  return { reader, calls };
}
