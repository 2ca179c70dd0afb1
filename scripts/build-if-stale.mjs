// `npm start`'s prestart: builds only when dist/ is older than what it is built from (src/, the
// TypeScript configuration, the lockfile), so a second start begins at once instead of compiling again.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The newest modification time under `dir` (a file: its own). */
function newest(dir) {
  const stat = statSync(dir, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs; // a file removed changes its folder's time
  for (const entry of readdirSync(dir)) latest = Math.max(latest, newest(path.join(dir, entry)));
  return latest;
}

const built = statSync(path.join(ROOT, 'dist', 'cli.js'), { throwIfNoEntry: false })?.mtimeMs ?? 0;
const sources = Math.max(
  ...['src', 'tsconfig.json', 'package.json', 'package-lock.json'].map((p) => newest(path.join(ROOT, p))),
);
if (built > sources) {
  console.log('dist/ is up to date: not rebuilding (npm run build forces it)');
} else {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const { status } = spawnSync(npm, ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  process.exitCode = status ?? 1;
}
