/**
 * How a test starts a node process of its own (the gateway's command, a helper script): `node ARGS`
 * without tap's per-process instrumentation, its coverage recorded by V8 itself.
 *
 * tap puts `@tapjs/processinfo`'s module hooks in NODE_OPTIONS and re-adds them to every child it
 * sees spawned; in a child they double a gateway's start (0.9 s to 1.6 s on a 2-core machine), and
 * the suite starts hundreds. `env -u NODE_OPTIONS` drops them after tap's spawn hook has run; while
 * tap records coverage, NODE_V8_COVERAGE points V8's own recorder (source maps included) at the
 * folder tap's report reads, so what a child runs of `src/` still counts. A NODE_OPTIONS of the
 * caller's own is dropped too: node options go in `args`, before the script (`spawnGateway`'s
 * `nodeArgs`).
 */
import path from 'node:path';

/** Where tap's report reads coverage from, when this test process records any. */
const COVERAGE =
  process.env._TAPJS_PROCESSINFO_COVERAGE_ === '1' && process.env._TAPJS_PROCESSINFO_CWD_
    ? path.join(process.env._TAPJS_PROCESSINFO_CWD_, '.tap', 'coverage')
    : undefined;

/**
 * `[command, args]` for `spawn`, `execFile` or `spawnSync` that run `node ...args`; `coverage: false`
 * for a script of the tests' own (V8 would report the script itself, which is not `src/`).
 */
export function node(args: string[], { coverage = true } = {}): [string, string[]] {
  const record = coverage && COVERAGE ? [`NODE_V8_COVERAGE=${COVERAGE}`] : [];
  return ['env', ['-u', 'NODE_OPTIONS', ...record, process.execPath, ...args]];
}
