import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');

/** The documents a reader of the repository gets: the README, docs/ and the SDKs' own pages. */
function documents(): string[] {
  const sdkPages = readdirSync(path.join(ROOT, 'sdk'), { recursive: true, encoding: 'utf8' }).filter(
    (file) => file.endsWith('.md') && !file.split(path.sep).some((part) => part === 'node_modules' || part.startsWith('.')),
  );
  const docs = readdirSync(path.join(ROOT, 'docs')).filter((file) => file.endsWith('.md'));
  return ['README.md', ...docs.map((file) => `docs/${file}`), ...sdkPages.map((file) => `sdk/${file}`)];
}

describe('the documentation stands on its own', () => {
  it('reads the README, every page of docs/ and the SDK READMEs', () => {
    expect(documents()).toEqual(expect.arrayContaining(['README.md', 'docs/contract.md', 'docs/deploy.md', 'sdk/python/README.md', 'sdk/typescript/README.md']));
  });

  it('points at no file outside the repository (decisions.md, ../shared)', () => {
    const pointers = documents().flatMap((file) =>
      readFileSync(path.join(ROOT, file), 'utf8')
        .split('\n')
        .flatMap((line, index) => (/decisions\.md|\.\.\/shared\b/.test(line) ? [`${file}:${index + 1}: ${line.trim()}`] : [])),
    );
    expect(pointers).toEqual([]);
  });
});
