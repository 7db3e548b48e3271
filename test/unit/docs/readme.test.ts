import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { FIRST_QUERY } from '../../../scripts/local/usage.js';
import { blockAfter, readmeExamples } from '../../support/readme-examples.js';

const ROOT = path.resolve(__dirname, '../../..');
const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const benchmarks = readFileSync(path.join(ROOT, 'docs/benchmarks.md'), 'utf8');
const packageJson = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };

// The range logic npm itself applies to `engines` (a dependency of the tools in the lockfile, so always installed).
const semver = createRequire(__filename)('semver') as { satisfies(version: string, range: string): boolean };

interface LockedPackage {
  os?: string[];
  cpu?: string[];
  libc?: string[];
  inBundle?: boolean;
  dev?: boolean;
  engines?: { node?: string };
}

/** `os`, `cpu` or `libc` of a package against one platform value, as npm reads them ("!x" excludes). */
const allows = (list: string[] | undefined, value: string) =>
  !list || (!list.includes(`!${value}`) && (list.every((entry) => entry.startsWith('!')) || list.includes(value)));

/**
 * The packages `npm ci` adds on Linux x64 (glibc), keyed by their path in node_modules: the lockfile's entries for that
 * platform, less those bundled inside another package, which npm does not count as added.
 */
function installedOnLinuxX64(): [string, LockedPackage][] {
  const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockedPackage> };
  return Object.entries(lock.packages).filter(
    ([key, entry]) => key.includes('node_modules/') && !entry.inBundle && allows(entry.os, 'linux') && allows(entry.cpu, 'x64') && allows(entry.libc, 'glibc'),
  );
}

/** The installed packages whose `engines.node` refuses `version`: one EBADENGINE warning each. */
const refusing = (version: string) => installedOnLinuxX64().filter(([, entry]) => entry.engines?.node !== undefined && !semver.satisfies(version, entry.engines.node));
const packageName = (key: string) => key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);

describe('the README, a stranger to a queried trace', () => {
  it('is at most 200 lines', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(200);
  });

  it('links only to files that exist', () => {
    const links = [...readme.matchAll(/\]\(([^)#]+)(?:#[^)]*)?\)/g)].map((match) => match[1] as string);
    expect(links.length).toBeGreaterThan(10);
    expect(links.filter((link) => !existsSync(path.join(ROOT, link)))).toEqual([]);
  });

  it('runs the query npm start suggests, and that query has an order and a LIMIT', () => {
    expect(readmeExamples(readme).tryIt.query).toBe(`npm run query -- "${FIRST_QUERY}"`);
    expect(FIRST_QUERY).toMatch(/ ORDER BY timestamp DESC LIMIT \d+$/);
  });

  it('gives every query it suggests a LIMIT', () => {
    const queries = [...readme.matchAll(/npm run query -- "([^"<]+)"/g)].map((match) => match[1] as string);
    expect(queries.length).toBeGreaterThanOrEqual(3);
    expect(queries.filter((sql) => !/ LIMIT \d+$/.test(sql))).toEqual([]);
  });

  it('gives the number of packages npm ci adds on Linux x64, counted from package-lock.json', () => {
    const stated = /^npm ci +# adds ([\d,]+) packages on Linux x64/m.exec(readme)?.[1];
    expect(stated).toBeDefined();
    expect(Number(stated?.replaceAll(',', ''))).toBe(installedOnLinuxX64().length);
  });

  it('says how many EBADENGINE warnings npm ci prints on Node 20, from which dev tools, and why they are harmless', () => {
    const [, count, minor] = /`EBADENGINE` warnings `npm ci` prints on\s+Node 20 \((\d+) from 20\.(\d+) on\)/.exec(readme) ?? [];
    expect(count).toBeDefined();
    const warned = refusing(`20.${minor}.0`);
    expect(warned.map(([key]) => packageName(key))).toHaveLength(Number(count));
    expect(refusing(`20.${Number(minor) - 1}.0`).length).toBeGreaterThan(warned.length);
    // Named in the README as Stryker 10 and its Babel 8; every one a dev tool that the scripts' Node 24 satisfies.
    expect(new Set(warned.map(([key]) => packageName(key).split('/')[0]))).toEqual(new Set(['@stryker-mutator', '@babel']));
    expect(readme).toMatch(/Stryker 10, the mutation tester, and its Babel 8/);
    expect(packageJson.devDependencies['@stryker-mutator/core']).toMatch(/^10\./);
    expect(warned.filter(([, entry]) => !entry.dev || !semver.satisfies(packageJson.devDependencies.node as string, entry.engines?.node as string))).toEqual([]);
  });

  it('quotes each figure of its "Figures" list from its row of docs/benchmarks.md', () => {
    const bullets = figureBullets();
    const rows = [
      'ingest handler CPU per trace',
      'OTLP route handler CPU per span',
      'landing: span rows/s encoded to Parquet',
      'hot org in the DynamoDB model',
      'cost model',
      'visible in `traces` after the 200',
      'compaction: DuckDB query over that busy org-hour',
    ].map((label) => benchmarks.split('\n').find((line) => line.startsWith(`| ${label}`)) ?? `no row '${label}'`);
    expect(bullets).toHaveLength(rows.length);
    const numbers = (text: string): string[] => text.match(/\d+(?:[.,]\d+)*/g) ?? [];
    const missing = bullets.flatMap((bullet, index) => numbers(bullet).filter((n) => !numbers(rows[index] as string).includes(n)).map((n) => `${n} in '${bullet}'`));
    expect(missing).toEqual([]);
  });

  it('runs every SDK and OpenTelemetry example in a new directory beside the clone, with the variables npm start wrote', () => {
    for (const marker of ['## Send from Python', '## Send from TypeScript', 'In Node, a complete program']) {
      const setup = blockAfter(readme, marker, 'sh');
      expect(setup).toMatch(/^source \.local\/demo\.env\b/);
      expect(setup).toMatch(/\bmkdir \.\.\/(trace-demo-[\w-]+) && cd \.\.\/\1\b/);
    }
  });

  it('asks by a tag its own examples send', () => {
    const asked = [...readme.matchAll(/list_contains\(tags, '([^']+)'\)/g)].map((match) => match[1] as string);
    expect(asked.length).toBeGreaterThan(0);
    const sent = new Set([...readme.matchAll(/tags(?:\\?"|"|)?[:=]\s*\[\\?["']([^"'\\]+)\\?["']\]/g)].map((match) => match[1] as string));
    expect(sent.size).toBeGreaterThan(0);
    expect(asked.filter((tag) => !sent.has(tag))).toEqual([]);
  });
});

/** The bullets of the "## Figures" section, one line each. */
function figureBullets(): string[] {
  const section = readme.slice(readme.indexOf('## Figures'), readme.indexOf('\n## ', readme.indexOf('## Figures') + 1));
  return section.split('\n').filter((line) => line.startsWith('- '));
}
