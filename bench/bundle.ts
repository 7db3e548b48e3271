import { execFileSync } from 'node:child_process';
import { mkdirSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Bundles a Lambda entry the way the stack does (esbuild, minified, ESM for Node 22) and measures
 * how long a fresh Node process takes to import it: the module-load part of a cold start.
 */
export async function bundleAndLoad(entry: string, env: Record<string, string>, samples = 5): Promise<{ bytes: number; loadMs: number }> {
  const outdir = join(root, 'bench/.tmp', basename(dirname(entry)));
  mkdirSync(outdir, { recursive: true });
  const outfile = join(outdir, 'index.mjs');
  await build({
    entryPoints: [join(root, entry)],
    bundle: true,
    minify: true,
    platform: 'node',
    target: 'node22',
    format: 'esm',
    outfile,
    logLevel: 'silent',
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  });
  const script = `const t = performance.now(); await import(${JSON.stringify(outfile)}); console.log(performance.now() - t);`;
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, ...env }, encoding: 'utf8' });
    times.push(Number(out.trim()));
  }
  times.sort((a, b) => a - b);
  return { bytes: statSync(outfile).size, loadMs: times[Math.floor(times.length / 2)] as number };
}
