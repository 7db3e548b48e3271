import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BatchTooLargeError } from '../../../lambda/ingest/core/errors.js';
import { MAX_DECODED_BODY_BYTES } from '../../../lambda/shared/request-limits.js';
import { GATEWAY_ANSWERS } from '../../../lib/gateway-responses.js';

const ROOT = path.resolve(__dirname, '../../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const DOCS = ['README.md', 'docs/api.md', 'docs/deploy.md', 'docs/contract.md', 'docs/local.md', 'docs/landing.md', 'docs/hardening.md'];
const ceilingMiB = `${MAX_DECODED_BODY_BYTES / 1024 / 1024} MiB`;
const ceilingBytes = MAX_DECODED_BODY_BYTES.toLocaleString('en-US');

describe('the docs state one request-size ceiling, the one in the code', () => {
  it.each(['README.md', 'docs/api.md', 'docs/deploy.md', 'docs/contract.md'])('%s states the ceiling and its code', (file) => {
    const text = read(file);
    expect(text).toContain(ceilingMiB);
    expect(text).toContain(`\`${new BatchTooLargeError('').code}\``);
  });

  it.each(['docs/api.md', 'docs/deploy.md'])('%s gives the ceiling in bytes', (file) => {
    expect(read(file)).toContain(ceilingBytes);
  });

  it.each(DOCS)('%s mentions the former 20 MiB limit only where it says it is the former one', (file) => {
    const paragraphs = read(file).split(/\n\s*\n/).filter((paragraph) => /\b20 MiB/.test(paragraph));
    for (const paragraph of paragraphs) expect(paragraph).toMatch(/former/);
  });

  it.each([GATEWAY_ANSWERS.requestTooLarge, GATEWAY_ANSWERS.notDelivered, GATEWAY_ANSWERS.unsupportedEncoding])(
    'docs/deploy.md\'s ceiling table gives the gateway\'s $code with its status $status and no Retry-After',
    ({ code, status }) => {
      const row = read('docs/deploy.md').split('\n').find((line) => line.startsWith('|') && line.includes(`\`${code}\``) && line.includes('| none |'));
      expect(row).toContain(`| ${status} |`);
    },
  );

  it.each(Object.entries(GATEWAY_ANSWERS).filter(([, answer]) => answer.status !== undefined))('docs/api.md lists the gateway\'s own answer %s with its status and code', (_, answer) => {
    const row = read('docs/api.md').split('\n').find((line) => line.startsWith('|') && line.includes(`| ${answer.status} | \`${answer.code}\``));
    expect(row).toBeDefined();
  });
});
