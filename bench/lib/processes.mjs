/**
 * Child processes of the bench: every target runs in its own process (so the load generator never
 * shares an event loop with what it measures), in its own process group (so a gateway's cluster
 * workers or nginx's workers go with it), with stdout and stderr in files of the bench's temporary
 * folder (the gateway really logs, and nothing of it flows through the load generator).
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Every child still running, by pid. */
const running = new Map();

/**
 * Starts `command args` with its output in `<dir>/<name>.out|.err`; resolves once it has logged a
 * JSON line `{"msg":"listening", ...}` (returns that line as `ready`), or once `probe()` resolves
 * true for children that log nothing of the kind (nginx). Rejects when it exits or is not ready
 * within `timeout` ms, with the tail of its stderr.
 */
export async function startChild(name, command, args, { dir, env, probe, timeout = 15_000 }) {
  const outFile = join(dir, `${name}.out`);
  const errFile = join(dir, `${name}.err`);
  const out = openSync(outFile, 'w');
  const err = openSync(errFile, 'w');
  const child = spawn(command, args, {
    detached: true,
    stdio: ['ignore', out, err],
    env: { ...process.env, ...env },
  });
  closeSync(out);
  closeSync(err);
  const entry = { name, child, outFile, errFile, exited: false, code: null };
  running.set(child.pid, entry);
  child.on('exit', (code, signal) => {
    entry.exited = true;
    entry.code = code ?? signal;
    running.delete(child.pid);
  });
  child.on('error', () => {
    entry.exited = true;
    running.delete(child.pid);
  });

  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    if (entry.exited) throw new Error(`${name} exited (${entry.code}) before listening:\n${tail(errFile)}`);
    const ready = probe ? ((await probe()) ? {} : undefined) : listeningLine(outFile);
    if (ready) return { ...entry, ready, pid: child.pid };
    await sleep(50);
  }
  await stopChild(entry);
  throw new Error(`${name} did not listen within ${timeout} ms:\n${tail(errFile)}${tail(outFile)}`);
}

function listeningLine(file) {
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const parsed = JSON.parse(line);
      if (parsed.msg === 'listening') return parsed;
    } catch {
      // a line still being written
    }
  }
  return undefined;
}

/** The last lines of a child's output file, for an error message. */
export function tail(file, lines = 15) {
  if (!existsSync(file)) return '';
  return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
}

/** Whether a child has exited (a crash under load is reported, not hidden). */
export function hasExited(entry) {
  return !running.has(entry.pid);
}

function signalGroup(pid, signal) {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/** SIGTERM to the child's process group, SIGKILL after `grace` ms if it is still there. */
export async function stopChild(entry, grace = 3_000) {
  const { child } = entry;
  if (!running.has(child.pid)) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  signalGroup(child.pid, 'SIGTERM');
  const timer = sleep(grace).then(() => 'timeout');
  if ((await Promise.race([exited, timer])) === 'timeout') {
    signalGroup(child.pid, 'SIGKILL');
    await exited;
  }
  // Workers or nginx workers left behind by a primary that exited first.
  signalGroup(child.pid, 'SIGKILL');
  running.delete(child.pid);
}

/** Stops every child still running. */
export async function stopAll() {
  await Promise.all([...running.values()].map((entry) => stopChild(entry)));
}

/**
 * Kills every child on the way out, however the bench ends: SIGINT/SIGTERM (stop them, run
 * `onSignal` — the temporary folder goes — and exit 130/143) and process exit (SIGKILL,
 * synchronously, as a last resort).
 */
export function installCleanup(onSignal = () => {}) {
  const stop = (signal, code) => {
    process.stderr.write(`\n${signal}: stopping the targets\n`);
    stopAll()
      .then(onSignal)
      .finally(() => process.exit(code));
  };
  process.once('SIGINT', () => stop('SIGINT', 130));
  process.once('SIGTERM', () => stop('SIGTERM', 143));
  process.on('exit', () => {
    for (const pid of running.keys()) signalGroup(pid, 'SIGKILL');
  });
}
