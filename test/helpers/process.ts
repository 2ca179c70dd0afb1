/**
 * The gateway as a user runs it: `node dist/cli.js --config FILE` in a process of its own, every
 * stdout line kept (parsed), and ways to wait for a line or for the exit without sleeping.
 *
 * None outlives its test: each is killed when the test that spawned it ends (its teardown), when
 * the test process exits, and, through `tether.mjs`, when the test process dies without either
 * (a timeout's signal).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import type { Test } from 'tap';
import { ROOT } from './gateway.js';
import { node } from './node-child.js';
import { until } from './wait.js';

const TETHER = `--import=${pathToFileURL(path.join(ROOT, 'test', 'helpers', 'tether.mjs')).href}`;

/**
 * How long a wait for a log line may take by default: a process start (a primary and its workers, all
 * recording coverage) on a loaded 2-core machine, still far below tap's per-file timeout.
 */
export const PROCESS_TIMEOUT_MS = 60_000;

/** The gateway processes of this test process still running. */
const running = new Set<ChildProcess>();
let guarded = false;

/** Kills `child` at once unless it is gone; resolves once it is. */
function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  return gone;
}

/** Kills `child` when `t` ends (if given) and when this process exits, if it is still running then. */
function guard(t: Test | undefined, child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
  if (!guarded) {
    guarded = true;
    process.once('exit', () => {
      for (const c of running) c.kill('SIGKILL');
    });
  }
  t?.teardown(() => kill(child));
}

/** `(t, file, options)`, or `(file, options)` without a teardown of its own. */
type Args = [Test, string, SpawnOptions?] | [string, SpawnOptions?];
const parse = (args: Args): [Test | undefined, string, SpawnOptions] =>
  typeof args[0] === 'string'
    ? [undefined, args[0], (args[1] as SpawnOptions | undefined) ?? {}]
    : [args[0], args[1] as string, (args[2] as SpawnOptions | undefined) ?? {}];

export type Line = Record<string, unknown>;

export interface GatewayProcess {
  child: ChildProcess;
  lines: Line[];
  stderr(): string;
  /** The exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /**
   * Resolves with the first line matching `pred`, once logged; rejects, naming `pred`, if the process
   * exits first or after `timeoutMs`.
   */
  waitFor(pred: (l: Line) => boolean, timeoutMs?: number): Promise<Line>;
  /** Resolves once `n` lines match `pred`; rejects as `waitFor` does. */
  waitForCount(pred: (l: Line) => boolean, n: number, timeoutMs?: number): Promise<void>;
}

export interface SpawnOptions {
  /** Node options before the script (`--import` of a test-only module). */
  nodeArgs?: string[];
  /** Extra environment variables. */
  env?: Record<string, string>;
}

/** Spawns `gateway --config FILE`, killed when `t` ends if still running. */
export function spawnGateway(...args: Args): GatewayProcess {
  const [t, configFile, options] = parse(args);
  const child = spawn(
    ...node([TETHER, ...(options.nodeArgs ?? []), path.join(ROOT, 'dist', 'cli.js'), '--config', configFile]),
    // stdin: the tether's pipe, closed by this process' end.
    { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...options.env } },
  );
  guard(t, child);
  const lines: Line[] = [];
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (l) =>
    lines.push(JSON.parse(l)),
  );
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  // Gone once its output is read to the end too (its last lines may trail the exit).
  let gone = false;
  child.on('close', () => (gone = true));
  /** The first line matching `pred`, or undefined; throws once the process is gone without one. */
  const find = (pred: (l: Line) => boolean, n = 1): Line | undefined => {
    const found = lines.filter(pred);
    if (found.length >= n) return found[0];
    if (gone) throw new Error(`the gateway exited; stderr: ${stderr}`);
    return undefined;
  };
  return {
    child,
    lines,
    stderr: () => stderr,
    exited,
    async waitFor(pred, timeoutMs = PROCESS_TIMEOUT_MS) {
      let found: Line | undefined;
      await until(
        `the gateway logs a line where ${pred}`,
        () => (found = find(pred)) !== undefined,
        timeoutMs,
      );
      return found!;
    },
    async waitForCount(pred, n, timeoutMs = PROCESS_TIMEOUT_MS) {
      await until(`the gateway logs ${n} lines where ${pred}`, () => find(pred, n) !== undefined, timeoutMs);
    },
  };
}

/** A started gateway process with the ports of its `listening` line. */
export interface ListeningGateway extends GatewayProcess {
  port: number;
  adminPort: number;
}

/** Spawns the gateway (killed when `t` ends) and resolves once it logs `listening`. */
export async function startGatewayProcess(...args: Args): Promise<ListeningGateway> {
  const proc = spawnGateway(...args);
  const listening = await proc.waitFor((l) => l.msg === 'listening');
  return Object.assign(proc, { port: listening.port as number, adminPort: listening.admin_port as number });
}

/** Sends SIGTERM (unless already gone) and resolves with the exit code. */
export function stopGatewayProcess(proc: GatewayProcess): Promise<number | null> {
  if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGTERM');
  return proc.exited;
}
