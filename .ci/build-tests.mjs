// Compiles the tests once for `npm test` (the pretest step, after `npm run build`): test/tsconfig.json
// to dist-test/, with source maps, so that tap runs plain JavaScript instead of loading a TypeScript
// compiler into every test process. dist-test/src is a link to dist/: the tests run the very build the
// gateway processes they spawn run (and dist/ sits where src/observability/build.ts finds package.json).
import { spawnSync } from 'node:child_process';
import { rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';

const out = 'dist-test';
rmSync(out, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const { status } = spawnSync(process.execPath, [tsc, '-p', 'test/tsconfig.json'], { stdio: 'inherit' });
if (status !== 0) process.exit(status ?? 1);
rmSync(`${out}/src`, { recursive: true, force: true });
symlinkSync('../dist', `${out}/src`, 'dir');
