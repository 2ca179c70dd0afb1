// The layering of src/, run by `npm run lint`: no file under src/backends/ or src/upstream/ imports
// src/http/ or src/auth/ (a backend never sees the HTTP request), and no import cycle anywhere
// (type-only imports count: a cycle of types is still a cycle of modules to read). Relative imports
// only; a `.js` specifier names the `.ts` file beside it.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(process.argv[2] ?? 'src');
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Each .ts file under `root` and the files it imports. */
const graph = new Map();
for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
  const file = path.join(entry.parentPath ?? entry.path, entry.name);
  const imports = new Set();
  for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
    const spec = m[1] ?? m[2];
    if (spec.startsWith('.')) imports.add(path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts')));
  }
  graph.set(file, imports);
}

const shown = (file) => path.relative(path.dirname(root), file);
const problems = [];
for (const [file, imports] of graph) {
  if (!/^(backends|upstream)\//.test(path.relative(root, file))) continue;
  for (const target of imports) {
    if (/^(http|auth)\//.test(path.relative(root, target))) {
      problems.push(`${shown(file)} imports ${shown(target)}: backends and upstream/ never see http/ or auth/`);
    }
  }
}

// Tarjan's strongly connected components: each of more than one file (or a file importing itself)
// is a cycle.
let next = 0;
const index = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
const visit = (v) => {
  index.set(v, next);
  low.set(v, next);
  next++;
  stack.push(v);
  onStack.add(v);
  for (const w of graph.get(v)) {
    if (!graph.has(w)) continue;
    if (!index.has(w)) {
      visit(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (onStack.has(w)) {
      low.set(v, Math.min(low.get(v), index.get(w)));
    }
  }
  if (low.get(v) !== index.get(v)) return;
  const component = [];
  let w;
  do {
    w = stack.pop();
    onStack.delete(w);
    component.push(w);
  } while (w !== v);
  if (component.length > 1 || graph.get(v).has(v)) {
    problems.push(`import cycle: ${component.map(shown).sort().join(', ')}`);
  }
};
for (const file of graph.keys()) if (!index.has(file)) visit(file);

for (const p of problems) console.error(p);
process.exitCode = problems.length === 0 ? 0 : 1;
