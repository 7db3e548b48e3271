import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');
const doc = readFileSync(path.join(ROOT, 'docs/deploy.md'), 'utf8');

/** The shell block of docs/deploy.md after `marker`. */
function shellBlockAfter(marker: string): string {
  const start = doc.indexOf('```sh\n', doc.indexOf(marker));
  return doc.slice(start + 6, doc.indexOf('\n```', start + 6));
}

describe("docs/deploy.md's first-organization commands", () => {
  it('set every variable they use before using it', () => {
    const block = shellBlockAfter('The first organization and key, with the admin CLI against the deployed stack');
    const set = new Set<string>();
    const unset: string[] = [];
    for (const line of block.split('\n')) {
      const code = line.replace(/\s+#.*$/, '');
      for (const [, name] of code.matchAll(/\$\{?([A-Z_][A-Z0-9_]*)\}?/g)) if (!set.has(name as string)) unset.push(name as string);
      for (const [, name] of code.matchAll(/(?:^|export |\s)([A-Z_][A-Z0-9_]*)=/g)) set.add(name as string);
    }
    expect(set.size).toBeGreaterThanOrEqual(3);
    expect(unset).toEqual([]);
  });
});
