import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import * as tenancy from '../../../lambda/shared/domain/tenancy.js';
import { createHarness } from '../../support/ingest-harness.js';
import { buildBatch, gatewayEvent } from '../../../devkit/builders/trace-builders.js';

/**
 * Secret comparison is constant-time because there is none: a key is hashed (SHA-256) and looked up
 * by its hash with one GetItem, so no code compares a presented secret with a stored one. These
 * tests pin that: the ingest path's only uses of the secret are the form check and the hash, and no
 * source file compares anything secret-like with `==`/`!=`/`===`/`!==`, `startsWith`, `localeCompare`
 * or `Buffer.compare`/`equals` unless it uses `crypto.timingSafeEqual`.
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

  it('no source file compares a secret except through crypto.timingSafeEqual', () => {
    const offending: string[] = [];
    for (const file of SOURCE_DIRS.flatMap(sourceFiles)) {
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      if (text.includes('timingSafeEqual')) continue;
      text.split('\n').forEach((line, i) => {
        const code = line.replace(/\/\/.*$/, '').replace(PRESENCE_CHECK, ' ');
        if (COMPARISONS.some((pattern) => pattern.test(code))) offending.push(`${file}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(offending).toEqual([]);
  });

  it('files that do compare secrets use crypto.timingSafeEqual on equal-length digests', () => {
    for (const file of SOURCE_DIRS.flatMap(sourceFiles)) {
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      if (!text.includes('timingSafeEqual')) continue;
      // Inputs of different lengths make timingSafeEqual throw; hashing first makes them equal.
      expect({ file, hashes: /createHash\(|createHmac\(/.test(text) }).toEqual({ file, hashes: true });
    }
  });

  it('the ingest path uses the secret only to check its form and to hash it', () => {
    const text = readFileSync(path.join(ROOT, 'lambda/ingest/core/tenancy/identify-caller.ts'), 'utf8');
    const start = text.indexOf('async function authenticate(');
    const end = text.indexOf('\n}\n', start);
    const body = text.slice(start, end);
    expect(start).toBeGreaterThan(-1);
    const uses = [...body.matchAll(/\bsecret\b/g)].map((m) => body.slice(Math.max(0, (m.index ?? 0) - 30), (m.index ?? 0) + 10));
    expect(uses).toHaveLength(3);
    expect(uses[0]).toMatch(/const secret = h/);
    expect(uses[1]).toMatch(/isWellFormedApiKey\(secret/);
    expect(uses[2]).toMatch(/hashApiKey\(secret/);
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
