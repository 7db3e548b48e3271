#!/usr/bin/env node
// Fails when the project's own modules import each other in a cycle. Type-only imports count: a
// cycle of types is still two modules that are really one, or a type in the wrong home.
// Usage: node scripts/check-import-cycles.mjs [dir ...]   (default: the source folders below)
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE_DIRS = ['lambda', 'lib', 'bin', 'scripts', 'devkit', 'bench', 'test'];
const SKIP_DIRS = new Set(['node_modules', 'cdk.out', '.local', '.tmp', 'dist', 'build', 'coverage']);
const CODE = /\.(ts|mts|cts|js|mjs|cjs)$/;
// `import x from`, `import type`, `export … from`, side-effect `import '…'` and `import('…')`,
// relative specifiers only (packages cannot import us back).
const SPECIFIERS = [
  /\bfrom\s*(['"])(\.{1,2}\/[^'"]+)\1/g,
  /\bimport\s*(['"])(\.{1,2}\/[^'"]+)\1/g,
  /\bimport\s*\(\s*(['"])(\.{1,2}\/[^'"]+)\1\s*\)/g,
];

function sourceFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return SKIP_DIRS.has(name) ? [] : sourceFiles(path);
    return CODE.test(name) ? [path] : [];
  });
}

/** The file a relative specifier names: TypeScript's NodeNext rules, where `./x.js` means `./x.ts`. */
function resolveSpecifier(fromFile, specifier) {
  const base = resolve(dirname(fromFile), specifier);
  const candidates = [base, base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), base.replace(/\.cjs$/, '.cts'), `${base}.ts`, join(base, 'index.ts')];
  return candidates.find((candidate) => CODE.test(candidate) && existsSync(candidate) && statSync(candidate).isFile());
}

function importGraph(files) {
  const graph = new Map();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const targets = new Set();
    for (const pattern of SPECIFIERS) {
      for (const match of text.matchAll(pattern)) {
        const target = resolveSpecifier(file, match[2]);
        if (target) targets.add(target);
      }
    }
    graph.set(file, [...targets]);
  }
  return graph;
}

/** Tarjan's strongly connected components: each component of two or more files (or a file importing itself) holds a cycle. */
function cyclicComponents(graph) {
  let counter = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const components = [];
  const visit = (start) => {
    // Iterative, so a long import chain cannot overflow the call stack.
    const frames = [{ node: start, next: 0 }];
    index.set(start, counter); low.set(start, counter); counter++;
    stack.push(start); onStack.add(start);
    while (frames.length > 0) {
      const frame = frames[frames.length - 1];
      const targets = graph.get(frame.node) ?? [];
      if (frame.next < targets.length) {
        const target = targets[frame.next++];
        if (!index.has(target)) {
          index.set(target, counter); low.set(target, counter); counter++;
          stack.push(target); onStack.add(target);
          frames.push({ node: target, next: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.node, Math.min(low.get(frame.node), index.get(target)));
        }
        continue;
      }
      frames.pop();
      if (frames.length > 0) {
        const parent = frames[frames.length - 1].node;
        low.set(parent, Math.min(low.get(parent), low.get(frame.node)));
      }
      if (low.get(frame.node) === index.get(frame.node)) {
        const component = [];
        let member;
        do { member = stack.pop(); onStack.delete(member); component.push(member); } while (member !== frame.node);
        const selfImport = (graph.get(frame.node) ?? []).includes(frame.node);
        if (component.length > 1 || selfImport) components.push(component.sort());
      }
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return components;
}

/** One shortest way round a component, from its first file back to it, so the report names the imports to cut. */
function shortestCycle(graph, component) {
  const members = new Set(component);
  const start = component[0];
  const previous = new Map();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift();
    for (const target of graph.get(node) ?? []) {
      if (!members.has(target)) continue;
      if (target === start) {
        const path = [node];
        while (path[0] !== start) path.unshift(previous.get(path[0]));
        return [...path, start];
      }
      if (!previous.has(target)) { previous.set(target, node); queue.push(target); }
    }
  }
  return [start, start];
}

const dirs = process.argv.length > 2 ? process.argv.slice(2) : SOURCE_DIRS;
const graph = importGraph(dirs.flatMap((dir) => sourceFiles(join(root, dir))));
const components = cyclicComponents(graph);
const name = (file) => relative(root, file);
for (const component of components) {
  console.error(`import cycle among ${component.length} file(s): ${component.map(name).join(', ')}`);
  console.error(`  for example: ${shortestCycle(graph, component).map(name).join(' -> ')}`);
}
if (components.length > 0) {
  console.error(`${components.length} import cycle(s) in ${graph.size} files`);
  process.exit(1);
}
console.log(`no import cycles in ${graph.size} files`);
