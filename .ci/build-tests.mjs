// Compiles the tests once for `npm test` (the pretest step, after `npm run build`): test/tsconfig.json
// to dist-test/, with source maps, so that tap runs plain JavaScript instead of loading a TypeScript
// compiler into every test process; the other files under test/ are copied beside them. dist-test/src is a link to dist/: the tests run the very build the
// gateway processes they spawn run (and dist/ sits where src/observability/build.ts finds package.json).
import { spawnSync } from 'node:child_process';
import { cpSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';

const out = 'dist-test';
rmSync(out, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
// Emitted without a type check (`isolatedModules` makes each file's output its own): `npm run lint`
// type-checks the tests, and this step is half the time without it.
const { status } = spawnSync(process.execPath, [tsc, '-p', 'test/tsconfig.json', '--noCheck'], {
  stdio: 'inherit',
});
if (status !== 0) process.exit(status ?? 1);
// Scripts and fixtures beside the tests (`.mjs` children a test spawns) go along, where tsc puts the tests.
cpSync('test', `${out}/test`, {
  recursive: true,
  filter: (from) => statSync(from).isDirectory() || !from.endsWith('.ts'),
});
rmSync(`${out}/src`, { recursive: true, force: true });
symlinkSync('../dist', `${out}/src`, 'dir');
// The copied scripts import the build as `../../dist/…`, written from test/: the same link under that name.
symlinkSync('../dist', `${out}/dist`, 'dir');
