import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { it } from 'node:test';
import { FakeService } from './fake-service.js';
import { exitOf } from './support.js';

// The example of sdk/typescript/README.md, verbatim but for where it imports the SDK from.

const INDEX = new URL('../src/index.js', import.meta.url).href;
const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

function example(): string {
  const block = /```js\n(\/\/ example\.mjs\n[\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(block, 'no example.mjs block in the README');
  return block.replace("from '@trace-ingest/sdk'", `from ${JSON.stringify(INDEX)}`);
}

async function run(service: FakeService): Promise<{ code: number | string; stderr: string }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', example()], {
    env: { ...process.env, TRACE_INGEST_API_KEY: 'tik_x', TRACE_INGEST_BASE_URL: service.url },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { code: await exitOf(child), stderr };
}

it('the README example exits 0 when its trace was sent, and 1 with a warning naming the reason when nothing was', async () => {
  const service = await new FakeService().start();
  try {
    assert.deepEqual(await run(service), { code: 0, stderr: '' });
    service.answer = () => [401, { code: 'invalid_api_key', detail: 'unknown API key' }];
    const refused = await run(service);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /rejected 1 trace: invalid_api_key/);
  } finally {
    await service.close();
  }
});
