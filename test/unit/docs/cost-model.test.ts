import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CountingBucket } from '../../../bench/cost/counting-bucket.js';

const ROOT = path.resolve(__dirname, '../../..');
const deploy = readFileSync(path.join(ROOT, 'docs/deploy.md'), 'utf8');
const results = (JSON.parse(readFileSync(path.join(ROOT, 'bench/results.json'), 'utf8')) as { results: { group: string; metric: string; value: number }[] }).results;

/** A figure of the `cost` group of bench/results.json, by the start of its metric. */
function figure(metric: string): number {
  const found = results.find((r) => r.group === 'cost' && r.metric.startsWith(metric));
  if (!found) throw new Error(`bench/results.json has no cost figure "${metric}…": run npm run bench -- cost`);
  return found.value;
}

/** The row of docs/deploy.md's candidates table that starts with `| <label>`. */
function candidateRow(label: string): string {
  const row = deploy.split('\n').find((line) => line.startsWith(`| ${label}`));
  if (!row) throw new Error(`docs/deploy.md has no candidate row "${label}"`);
  return row;
}

const dollars = (value: number) => `$${value.toFixed(3)}`;
const count = (value: number) => Math.round(value).toLocaleString('en-US');

describe('docs/deploy.md quotes the cost model as it last ran (npm run bench -- cost)', () => {
  const many = '1,000 orgs × 1 trace/s';
  const one = '1 org × 1,000 traces/s';
  it.each([
    ['before: per-organization objects, trace-id keys, 5 s window', 'before'],
    ['**request-chunk keys, large groups in hash-ordered row groups (built)**', 'request-keys'],
  ])('%s: totals, PUTs, objects and freshness', (label, id) => {
    const row = candidateRow(label);
    expect(row).toContain(dollars(figure(`${many}, ${id}: all-in`)));
    expect(row).toContain(count(figure(`${many}, ${id}: landing PUTs`)));
    expect(row).toContain(count(figure(`${many}, ${id}: objects written`)));
    expect(row).toContain(`${figure(`${many}, ${id}: freshness p99`)} s`);
    expect(row).toContain(dollars(figure(`${one}, ${id}: all-in`)));
  });

  it('the chosen design\'s modelled total for one organization', () => {
    expect(candidateRow('**the built design + part workers for a large hour (chosen)**')).toContain(dollars(figure(`${one}, request-keys+part-workers: all-in`)));
  });
});

describe('the cost model\'s bucket bills requests as S3 does', () => {
  it('a LIST per 1,000 keys, a PUT per object and per multipart call, a GET per read, DELETE free', async () => {
    const bucket = new CountingBucket();
    bucket.caller = 'worker';
    for (let i = 0; i < 2_500; i++) await bucket.put(`traces/org_id=a/dt=2026-11-25/hour=10/${i}.parquet`, new Uint8Array(1));
    expect(bucket.requests.worker.put).toBe(2_500);
    await bucket.list('traces/');
    expect(bucket.requests.worker.list).toBe(3);
    await bucket.list('nothing/');
    expect(bucket.requests.worker.list).toBe(4);
    const upload = await bucket.createMultipartUpload('compacted/x');
    const part = await bucket.uploadPart('compacted/x', upload, 1, new Uint8Array(10));
    await bucket.completeMultipartUpload('compacted/x', upload, [part]);
    expect(bucket.requests.worker.put).toBe(2_503);
    const [object] = await bucket.list('compacted/');
    await bucket.open(object!);
    await bucket.get('manifests/none');
    expect(bucket.requests.worker.get).toBe(2);
    await bucket.delete(['compacted/x']);
    expect(bucket.requests.worker).toEqual({ put: 2_503, get: 2, list: 5, delete: 1 });
    expect(bucket.requests.landing).toEqual({ put: 0, get: 0, list: 0, delete: 0 });
    expect(await bucket.organizations().list()).toEqual(['a']);
    expect(bucket.requests.worker.list).toBe(7);
  });
});
