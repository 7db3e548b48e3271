/**
 * The lake is the bottom of the data bucket's code: compaction, erasure and retention call it, and it calls none of
 * them. Among the three, imports run one way only (no two import each other), so that each can change without the
 * others. Read from the source's own import lines.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../../..');
const FOLDERS = ['lake', 'compaction', 'erasure', 'retention'] as const;
type Folder = (typeof FOLDERS)[number];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** Per folder of lambda/, the other folders of lambda/ its files import (relative specifiers, type-only ones included). */
function folderImports(): Map<Folder, Set<string>> {
  const imports = new Map<Folder, Set<string>>();
  for (const folder of FOLDERS) {
    const named = new Set<string>();
    for (const file of files(join(ROOT, 'lambda', folder))) {
      for (const match of readFileSync(file, 'utf8').matchAll(/\bfrom\s*'(\.{1,2}\/[^']+)'|\bimport\s*\(\s*'(\.{1,2}\/[^']+)'\s*\)/g)) {
        const target = relative(join(ROOT, 'lambda'), resolve(dirname(file), match[1] ?? match[2]!));
        const top = target.split('/')[0]!;
        if (top !== folder) named.add(top);
      }
    }
    imports.set(folder, named);
  }
  return imports;
}

describe('the lake and the three that call it', () => {
  const imports = folderImports();

  it('reads every folder (a folder without imports would make the checks below vacuous)', () => {
    for (const folder of FOLDERS) expect(imports.get(folder)!.size).toBeGreaterThan(0);
    expect([...imports.get('compaction')!]).toEqual(expect.arrayContaining(['lake', 'erasure']));
  });

  it('the lake imports none of compaction, erasure and retention', () => {
    expect([...imports.get('lake')!].filter((folder) => FOLDERS.includes(folder as Folder))).toEqual([]);
  });

  it('no two of the four import each other', () => {
    const mutual: string[] = [];
    for (const a of FOLDERS) for (const b of FOLDERS) if (a < b && imports.get(a)!.has(b) && imports.get(b)!.has(a)) mutual.push(`${a} <-> ${b}`);
    expect(mutual).toEqual([]);
  });

  it('erasure knows the lake only', () => {
    expect([...imports.get('erasure')!].filter((folder) => FOLDERS.includes(folder as Folder))).toEqual(['lake']);
  });
});
