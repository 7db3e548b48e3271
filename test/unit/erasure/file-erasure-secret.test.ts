import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileErasureSecret } from '../../../lambda/erasure/file-erasure-secret.js';

let dir: string;
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'erasure-secret-'))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('FileErasureSecret', () => {
  it('creates 32 random bytes as hex in a file only its owner reads, leaves no temporary file, and keeps them', async () => {
    const file = join(dir, 'erasure-secret');
    const secret = new FileErasureSecret(file);
    const bytes = await secret.get();
    expect(bytes).toHaveLength(32);
    expect(readFileSync(file, 'utf8')).toBe(Buffer.from(bytes).toString('hex'));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['erasure-secret']);
    rmSync(file);
    expect(await secret.get()).toEqual(bytes);
  });

  it('uses a secret another process made, never replacing it; two processes share one', async () => {
    const file = join(dir, 'erasure-secret');
    writeFileSync(file, `${'ab'.repeat(32)}\n`);
    expect(await new FileErasureSecret(file).get()).toEqual(Buffer.alloc(32, 0xab));
    expect(readFileSync(file, 'utf8')).toBe(`${'ab'.repeat(32)}\n`);
    const other = join(dir, 'other');
    expect(await new FileErasureSecret(other).get()).toEqual(await new FileErasureSecret(other).get());
    expect(readdirSync(dir).sort()).toEqual(['erasure-secret', 'other']);
  });

  it.each([
    ['too short', 'ab'.repeat(31)],
    ['not hex', 'zz'.repeat(32)],
    ['too long', 'ab'.repeat(33)],
    ['upper-case hex with text around it', `x${'AB'.repeat(32)}`],
  ])('refuses a file that does not hold a 32-byte hex secret (%s)', async (_, text) => {
    const file = join(dir, 'erasure-secret');
    writeFileSync(file, text);
    await expect(new FileErasureSecret(file).get()).rejects.toThrow(`${file} does not hold a 32-byte hex secret`);
  });

  it('fails with the write\'s own error when the directory is missing', async () => {
    await expect(new FileErasureSecret(join(dir, 'missing', 'erasure-secret')).get()).rejects.toMatchObject({ code: 'ENOENT', syscall: 'open' });
    expect(readdirSync(dir)).toEqual([]);
  });

  it('fails on an error other than "the secret is there", even with a readable secret in place, and removes its temporary file', async () => {
    const file = join(dir, 'erasure-secret');
    writeFileSync(file, 'ab'.repeat(32));
    // The temporary file's name is taken by a symbolic link to itself: the write fails (ELOOP), not with EEXIST.
    const temporary = `${file}.${process.pid}.tmp`;
    symlinkSync(temporary, temporary);
    expect(lstatSync(temporary).isSymbolicLink()).toBe(true);
    await expect(new FileErasureSecret(file).get()).rejects.toMatchObject({ code: 'ELOOP' });
    expect(existsSync(temporary) || readdirSync(dir).includes(temporary.slice(dir.length + 1))).toBe(false);
  });
});
