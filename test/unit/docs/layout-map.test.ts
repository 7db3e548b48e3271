import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');
const development = readFileSync(path.join(ROOT, 'docs/development.md'), 'utf8');
const layout = /## Layout\n\n```\n([\s\S]*?)```/.exec(development)?.[1] ?? '';

/** The top-level entries of the map: the first word of each line that starts at column 0. */
const topLevel = layout
  .split('\n')
  .filter((line) => /^\S/.test(line))
  .map((line) => line.split(/\s+/)[0] as string);

const directoriesIn = (relative: string) =>
  readdirSync(path.join(ROOT, relative)).filter((name) => statSync(path.join(ROOT, relative, name)).isDirectory() && name !== 'generated');

describe('the layout map of docs/development.md', () => {
  it('is found and names the folders of the repository', () => {
    expect(topLevel.length).toBeGreaterThan(8);
  });

  it('names only paths that exist', () => {
    expect(topLevel.filter((entry) => !existsSync(path.join(ROOT, entry)))).toEqual([]);
  });

  it('names every function folder under lambda/', () => {
    const missing = directoriesIn('lambda').filter((name) => !topLevel.includes(`lambda/${name}/`));
    expect(missing).toEqual([]);
  });

  it('names every module of the ingest function and of its core, and names none that is gone', () => {
    const ingestBlock = layout.slice(layout.indexOf('lambda/ingest/'), layout.indexOf('\nlambda/', layout.indexOf('lambda/ingest/') + 1));
    const named = new Set([...ingestBlock.matchAll(/\b([a-z-]+)\/(?=[\s,:)])/g)].map((match) => match[1] as string));
    const modules = [...directoriesIn('lambda/ingest'), ...directoriesIn('lambda/ingest/core')];
    expect(modules.length).toBeGreaterThan(5);
    expect(modules.filter((name) => !named.has(name))).toEqual([]);
    const files = [...ingestBlock.matchAll(/\b([a-z-]+\.ts)\b/g)].map((match) => match[1] as string);
    const gone = files.filter((file) => !existsSync(path.join(ROOT, 'lambda/ingest', file)) && !existsSync(path.join(ROOT, 'lambda/ingest/core', file)));
    expect(gone).toEqual([]);
  });
});
