import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { ErasureSecret } from './stored-erasures.js';

/**
 * The local stack's erasure secret: 32 random bytes in a file of its state directory (mode 0600), created by the
 * first process that needs it: written whole to a temporary file, then linked in place (fails if one is there), so
 * two processes never make two secrets and none reads half a one.
 */
export class FileErasureSecret implements ErasureSecret {
  private cached: Uint8Array | undefined;

  constructor(private readonly file: string) {}

  async get(): Promise<Uint8Array> {
    if (this.cached) return this.cached;
    const temporary = `${this.file}.${process.pid}.tmp`;
    try {
      writeFileSync(temporary, randomBytes(32).toString('hex'), { mode: 0o600 });
      linkSync(temporary, this.file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      rmSync(temporary, { force: true });
    }
    const hex = readFileSync(this.file, 'utf8').trim();
    if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`${this.file} does not hold a 32-byte hex secret`);
    this.cached = Buffer.from(hex, 'hex');
    return this.cached;
  }
}
