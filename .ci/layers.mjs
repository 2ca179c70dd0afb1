// The layering of src/, run by `npm run lint` (`node .ci/layers.mjs [src] [--graph]`). The top-level
// folders and files sit on the levels of STYLE.md, bottom to top; a file imports only from its own
// level or below, never along one of the NEVER arrows, with no cycle between folders and none between
// files (type-only imports count: a cycle of types is still a cycle of modules to read). Each fault
// names the import at fault. Relative imports only; a `.js` specifier names the `.ts` file beside it.
// `--graph` prints the folder import graph (each arrow with its number of imports) and exits.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** STYLE.md's order of folders, bottom to top; a folder on one line may import another on it. */
const LEVELS = [
  ['errors.ts', 'errors', 'config'],
  ['observability', 'signing', 'tls'],
  ['tokens', 'postgres', 'audit'],
  ['backends', 'upstream'],
  ['http', 'auth', 'ratelimit', 'validate'],
  ['operations'],
  ['pipeline.ts'],
  ['holds.ts', 'runtime.ts', 'app.ts', 'cluster', 'cli', 'cli.ts', 'main.ts'],
];

/** Arrows that never go, even downwards or within a level (STYLE.md), each as `from: [to, …]`. */
const NEVER = {
  backends: ['http', 'auth', 'operations'],
  upstream: ['http', 'auth', 'operations'],
  operations: ['auth'],
  validate: ['backends'],
  config: ['pipeline.ts'],
  tokens: ['backends', 'auth'],
  http: ['auth', 'pipeline.ts'],
};

/** The one arrow allowed up: the configuration schema composes the backend table's schemas. */
const ALLOWED = [['config/schema.ts', 'backends/table.ts']];

const args = process.argv.slice(2);
const root = path.resolve(args.find((a) => !a.startsWith('--')) ?? 'src');
const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

const levelOf = new Map(LEVELS.flatMap((names, level) => names.map((name) => [name, level])));
const relative = (file) => path.relative(root, file).split(path.sep).join('/');
/** A file's unit: its top-level folder (`http`) or, for a file at the top, its name (`app.ts`). */
const unitOf = (file) => relative(file).split('/')[0];
const shown = (file) => path.relative(path.dirname(root), file).split(path.sep).join('/');
const named = (unit) => (unit.endsWith('.ts') ? unit : `${unit}/`);

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

const problems = [];
/** Imports between units, by `from -> to`: what the folder graph and its cycles are made of. */
const arrows = new Map();
const allowed = [];
for (const unit of new Set([...graph.keys()].map(unitOf))) {
  if (!levelOf.has(unit))
    problems.push(`src/${named(unit)} has no level: add it to .ci/layers.mjs and STYLE.md`);
}
for (const [file, imports] of graph) {
  const from = unitOf(file);
  for (const target of imports) {
    const to = unitOf(target);
    if (from === to || !graph.has(target)) continue;
    if (ALLOWED.some(([a, b]) => relative(file) === a && relative(target) === b)) {
      allowed.push(`${named(from)} -> ${named(to)} (${relative(file)} -> ${relative(target)}, allowed)`);
      continue;
    }
    const at = `${shown(file)} imports ${shown(target)}`;
    if (NEVER[from]?.includes(to)) problems.push(`${at}: ${named(from)} never imports ${named(to)}`);
    else if (levelOf.get(to) > levelOf.get(from)) {
      problems.push(`${at}: ${named(from)} sits below ${named(to)} and imports only from its level or below`);
    }
    const key = `${from} -> ${to}`;
    if (!arrows.has(key)) arrows.set(key, []);
    arrows.get(key).push(at);
  }
}

if (args.includes('--graph')) {
  for (const [key, imports] of [...arrows].sort(([a], [b]) => a.localeCompare(b))) {
    const [from, to] = key.split(' -> ');
    console.log(`${named(from)} -> ${named(to)} (${imports.length})`);
  }
  for (const line of allowed) console.log(line);
  process.exit(0);
}

/**
 * Tarjan's strongly connected components of `nodes` under `next`: each of more than one node (or a
 * node that reaches itself) is a cycle.
 */
function cycles(nodes, next) {
  let count = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const visit = (v) => {
    index.set(v, count);
    low.set(v, count);
    count++;
    stack.push(v);
    onStack.add(v);
    for (const w of next(v)) {
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
    if (component.length > 1 || next(v).includes(v)) found.push(component);
  };
  for (const v of nodes) if (!index.has(v)) visit(v);
  return found;
}

const units = [...new Set([...arrows.keys()].flatMap((k) => k.split(' -> ')))];
const unitNext = (u) =>
  [...arrows.keys()].filter((k) => k.startsWith(`${u} -> `)).map((k) => k.split(' -> ')[1]);
for (const component of cycles(units, unitNext)) {
  // Arrows that go down cannot close a cycle. Those already named above (up, or never) are shown
  // by folder; a cycle along one level alone is shown by its imports.
  const inside = new Set(component);
  const within = [...arrows].filter(([key]) => key.split(' -> ').every((u) => inside.has(u)));
  const faulty = within.filter(([key]) => {
    const [from, to] = key.split(' -> ');
    return levelOf.get(to) > levelOf.get(from) || NEVER[from]?.includes(to);
  });
  const along = within.filter(([key]) => {
    const [from, to] = key.split(' -> ');
    return levelOf.get(to) === levelOf.get(from);
  });
  // Along one level, every arrow is shown with its count, and the imports of the thin ones (at
  // most three imports: usually the one that crept in).
  const at =
    faulty.length > 0
      ? faulty.map(([key]) => key.split(' -> ').map(named).join(' -> '))
      : along.map(([key, imports]) => {
          const arrow = key.split(' -> ').map(named).join(' -> ');
          return imports.length <= 3
            ? `${arrow} (${imports.join(', ')})`
            : `${arrow} (${imports.length} imports)`;
        });
  problems.push(
    `folder cycle between ${component.map(named).sort().join(', ')}, closed by: ${at.sort().join('; ')}`,
  );
}

const fileNext = (f) => [...graph.get(f)].filter((w) => graph.has(w));
for (const component of cycles(graph.keys(), fileNext)) {
  problems.push(`import cycle: ${component.map(shown).sort().join(', ')}`);
}

for (const p of problems) console.error(p);
process.exitCode = problems.length === 0 ? 0 : 1;
