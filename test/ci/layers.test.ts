/**
 * The layer check of `npm run lint` (`.ci/layers.mjs`): the real src/ passes, and a copy of it with
 * one throwaway import that breaks a rule of STYLE.md fails, naming that import.
 */
import { execFile } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';

/** The repository: the nearest folder above this file holding package.json (from test/ or dist-test/). */
const REPO = (() => {
  let dir = import.meta.dirname;
  while (!existsSync(path.join(dir, 'package.json'))) dir = path.dirname(dir);
  return dir;
})();
const SCRIPT = path.join(REPO, '.ci/layers.mjs');

/** Runs the check on `src`: its exit code and what it printed on stderr. */
async function check(src: string): Promise<{ code: number; stderr: string }> {
  try {
    const { stderr } = await promisify(execFile)(process.execPath, [SCRIPT, src]);
    return { code: 0, stderr };
  } catch (err) {
    const { code, stderr } = err as { code: number; stderr: string };
    return { code, stderr };
  }
}

/** A copy of the real src/ with `line` added at the end of `file` (relative to src/). */
function copyWith(t: Test, file: string, line: string): string {
  const src = path.join(t.testdir(), 'src');
  cpSync(path.join(REPO, 'src'), src, { recursive: true });
  appendFileSync(path.join(src, file), `\n${line}\n`);
  return src;
}

t.test('the real src/ has no upward arrow, no never-arrow and no cycle', async (t) => {
  t.same(await check(path.join(REPO, 'src')), { code: 0, stderr: '' });
});

t.test('an import of a folder above fails, naming the import', async (t) => {
  const src = copyWith(t, 'config/units.ts', "export type { Route } from '../http/router.js';");
  const { code, stderr } = await check(src);
  t.equal(code, 1);
  t.match(stderr, 'src/config/units.ts imports src/http/router.ts: config/ sits below http/');
  t.match(stderr, /folder cycle between .*config\/.*http\/.*closed by: .*config\/ -> http\//);
});

t.test('a never-arrow fails even where it points down', async (t) => {
  const src = copyWith(t, 'operations/operation.ts', "export type { JwtCache } from '../auth/jwt-cache.js';");
  const { code, stderr } = await check(src);
  t.equal(code, 1);
  t.match(
    stderr,
    'src/operations/operation.ts imports src/auth/jwt-cache.ts: operations/ never imports auth/',
  );
});

t.test('a cycle between two folders of one level fails, naming the thin arrow', async (t) => {
  const src = copyWith(
    t,
    'upstream/probe.ts',
    "export type { BackendCall } from '../backends/backend-call.js';",
  );
  const { code, stderr } = await check(src);
  t.equal(code, 1);
  t.match(stderr, 'folder cycle between backends/, upstream/, closed by: backends/ -> upstream/ (');
  t.match(stderr, 'upstream/ -> backends/ (src/upstream/probe.ts imports src/backends/backend-call.ts)');
});

t.test('a top-level folder with no level fails', async (t) => {
  const src = copyWith(t, 'errors.ts', '');
  mkdirSync(path.join(src, 'unplaced'));
  writeFileSync(
    path.join(src, 'unplaced', 'thing.ts'),
    "export type { Config } from '../config/schema.js';\n",
  );
  const { code, stderr } = await check(src);
  t.equal(code, 1);
  t.match(stderr, 'src/unplaced/ has no level');
});
