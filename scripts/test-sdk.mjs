#!/usr/bin/env node
// Runs both SDKs' tests, as `npm test` does (docs/sdk.md, "Tests"):
//   TypeScript: unit and conformance tests on this Node (24, from node_modules) and on the machine's
//   own Node (20); then `npm pack` installed into a scratch project, typechecked and run there, as ESM and as
//   CommonJS (`require()`).
//   Python: no import cycle among the package's modules (scripts/check-python-import-cycles.py); a fresh venv
//   (under sdk/.tmp, gitignored) with `pip install sdk/python` and pytest from
//   the machine's package index, the tests run against the installed package, and a smoke program.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SDK = path.join(ROOT, 'sdk');
const TMP = path.join(SDK, '.tmp');
const only = process.argv[2]; // "typescript" or "python" runs one half

function run(command, args, options = {}) {
  console.log(`[test:sdk] ${path.basename(command)} ${args.join(' ')}`);
  const result = spawnSync(command, args, { stdio: 'inherit', cwd: ROOT, ...options });
  if (result.status !== 0) {
    console.error(`[test:sdk] failed: ${command} ${args.join(' ')}`);
    process.exit(result.status ?? 1);
  }
}

/** The machine's own node: the first on PATH outside any node_modules/.bin. */
function systemNode() {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir.includes(`node_modules${path.sep}.bin`)) continue;
    const candidate = path.join(dir, 'node');
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

function testTypescript() {
  const tsc = path.join(ROOT, 'node_modules', '.bin', 'tsc');
  rmSync(path.join(SDK, 'typescript', 'build'), { recursive: true, force: true });
  run(tsc, ['-p', 'sdk/typescript/tsconfig.json']);
  const tests = readdirSync(path.join(SDK, 'typescript', 'build', 'test')).filter((name) => name.endsWith('.test.js')).map((name) => path.join('sdk/typescript/build/test', name));
  const nodes = [process.execPath];
  const other = systemNode();
  if (other && execFileSync(other, ['--version'], { encoding: 'utf8' }).trim() !== `v${process.versions.node}`) nodes.push(other);
  else console.warn('[test:sdk] no second Node on PATH outside node_modules/.bin: the TypeScript SDK runs on this Node only');
  for (const node of nodes) {
    console.log(`[test:sdk] TypeScript SDK on Node ${execFileSync(node, ['--version'], { encoding: 'utf8' }).trim()}`);
    run(node, ['--test', ...tests]);
  }

  const scratch = path.join(TMP, 'install-ts');
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  const packed = execFileSync('npm', ['pack', '--silent', '--pack-destination', scratch], { cwd: path.join(SDK, 'typescript'), encoding: 'utf8' }).trim().split('\n').pop();
  writeFileSync(path.join(scratch, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
  writeFileSync(
    path.join(scratch, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, types: ['node'], typeRoots: [path.join(ROOT, 'node_modules', '@types')], outDir: 'out', skipLibCheck: false }, files: ['smoke.ts'] }),
  );
  copyFileSync(path.join(SDK, 'smoke', 'smoke.ts'), path.join(scratch, 'smoke.ts'));
  copyFileSync(path.join(SDK, 'smoke', 'commonjs.cjs'), path.join(scratch, 'commonjs.cjs'));
  run('npm', ['install', '--no-audit', '--no-fund', '--offline', `./${packed}`], { cwd: scratch });
  run(tsc, ['-p', 'tsconfig.json'], { cwd: scratch });
  for (const node of nodes) {
    run(node, ['out/smoke.js'], { cwd: scratch });
    run(node, ['commonjs.cjs'], { cwd: scratch });
  }
}

function pipIndexArgs() {
  // The machine's own package index (offline); pip would otherwise wait for the public one first.
  const listed = spawnSync('python3', ['-m', 'pip', 'config', 'list'], { encoding: 'utf8' }).stdout ?? '';
  const value = (name) => listed.split('\n').find((line) => line.startsWith(`global.${name}=`))?.split('=').slice(1).join('=').replace(/^'|'$/g, '');
  const indexes = (value('extra-index-url') ?? '').split(/\s+/).filter((url) => url.startsWith('file:') && existsSync(new URL(url)));
  const links = value('find-links');
  return [...(indexes.length ? ['--index-url', indexes[0]] : []), ...(links && existsSync(links) ? ['--find-links', links] : [])];
}

function testPython() {
  run('python3', [path.join(ROOT, 'scripts', 'check-python-import-cycles.py'), path.join(SDK, 'python', 'src', 'trace_ingest')]);
  const venv = path.join(TMP, 'venv');
  rmSync(venv, { recursive: true, force: true });
  run('python3', ['-m', 'venv', venv]);
  const python = path.join(venv, 'bin', 'python');
  run(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', ...pipIndexArgs(), 'pytest', path.join(SDK, 'python')]);
  run(python, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', path.join(SDK, 'python', 'tests')], { cwd: TMP });
  run(python, [path.join(SDK, 'smoke', 'smoke.py')], { cwd: TMP });
}

mkdirSync(TMP, { recursive: true });
if (only !== 'python') testTypescript();
if (only !== 'typescript') testPython();
console.log('[test:sdk] both SDKs passed');
