import { readFileSync } from 'node:fs';
import path from 'node:path';
import { QUOTA_READ_TIMEOUT_MS } from '../../../lambda/ingest/core/rate/read-quota-state.js';

const ROOT = path.resolve(__dirname, '../../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

/** Paragraphs and table rows that say every 200 carries the quota headers. */
const claims = (text: string) =>
  text
    .split(/\n\s*\n|\n(?=\|)/)
    .filter((part) => /every\s+200\b/i.test(part) && /`RateLimit`/.test(part));

describe('the docs say where a 200 goes without RateLimit, as the code does', () => {
  it.each(['README.md', 'docs/api.md', 'docs/contract.md'])('%s states the claim with its exception', (file) => {
    const found = claims(read(file));
    expect(found.length).toBeGreaterThan(0);
    for (const claim of found) expect(claim).toContain(`${QUOTA_READ_TIMEOUT_MS} ms`);
  });

  it.each(['docs/operations.md', 'docs/sdk.md', 'docs/deploy.md', 'docs/local.md'])('%s makes the claim only with its exception', (file) => {
    for (const claim of claims(read(file))) expect(claim).toContain(`${QUOTA_READ_TIMEOUT_MS} ms`);
  });
});
