import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { FIRST_QUERY } from '../../../scripts/local/usage.js';
import { blockAfter, readmeExamples } from '../../support/readme-examples.js';

const ROOT = path.resolve(__dirname, '../../..');
const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

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
