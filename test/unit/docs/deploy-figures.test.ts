import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');
const doc = readFileSync(path.join(ROOT, 'docs/benchmarks.md'), 'utf8');
const deploy = readFileSync(path.join(ROOT, 'docs/deploy.md'), 'utf8');

/** The measured cell (second column) of the docs/benchmarks.md row whose first cell starts with `label`. */
function measured(label: string): string {
  const row = doc.split('\n').find((line) => line.startsWith(`| ${label}`));
  const cell = row?.split('|')[2]?.trim();
  if (!cell) throw new Error(`no docs/benchmarks.md row starting with '${label}'`);
  return cell;
}

describe('docs/deploy.md quotes the benchmark table (docs/benchmarks.md), not figures of its own', () => {
  it.each([
    ['ingest bundle', (cell: string) => cell.split(' / ')[0] as string],
    ['landing bundle', (cell: string) => cell.split(' / ')[0] as string],
    ['ingest: peak RSS', (cell: string) => cell],
    ['ingest handler CPU per trace', (cell: string) => cell],
  ])('%s', (label, figure) => {
    const value = figure(measured(label));
    expect(value).toMatch(/\d/);
    expect(deploy).toContain(value);
  });
});
