/**
 * The one-writer lock of a file trail: `<file>.lock`, created exclusively and holding the writer's
 * pid and host. A second process finds it and refuses, naming the holder; a lock whose process is
 * gone (on this host) is taken over. A takeover is itself guarded by `<file>.lock.takeover`, so that
 * two processes finding one stale lock do not both take it.
 */
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';

/** Why a trail's lock could not be taken; the message names the holder or the fault. */
export class TrailLockError extends Error {
  override readonly name = 'TrailLockError';
}

interface Holder {
  pid: number;
  host: string;
  since: string;
}

const FILESYSTEM_REFUSALS = new Set(['EACCES', 'EPERM', 'EROFS']);

/**
 * Takes the lock of the trail `file`; returns its release. This process opens each trail once
 * (`file.ts` shares it), so a lock naming this process's pid was left by an earlier process.
 */
export function acquireTrailLock(file: string): () => void {
  const lock = `${file}.lock`;
  const mine: Holder = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
  const text = `${JSON.stringify(mine)}\n`;
  for (let attempt = 0; attempt < 3; attempt++) {
    if (create(lock, text)) return () => release(lock, text);
    const found = read(lock);
    // Released meanwhile: try again.
    if (found === undefined) continue;
    if (alive(found.holder)) {
      const { pid, host, since } = found.holder as Holder;
      throw new TrailLockError(
        `audit trail ${file} is locked by process ${pid} on ${host} since ${since} (${lock}); ` +
          'one process writes a file trail',
      );
    }
    takeOver(lock, found.text);
  }
  throw new TrailLockError(`audit trail ${file}: its lock ${lock} keeps changing hands`);
}

/** True when the lock file was created with `text`; false when one exists. */
function create(lock: string, text: string): boolean {
  try {
    writeFileSync(lock, text, { flag: 'wx', mode: 0o644 });
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== undefined && FILESYSTEM_REFUSALS.has(code)) {
      throw new TrailLockError(`the directory of ${lock} is not writable (${code})`);
    }
    throw err;
  }
}

/** The lock's text and holder; a holder that cannot be read is a lock cut by a crash (stale). */
function read(lock: string): { text: string; holder: Holder | undefined } | undefined {
  let text: string;
  try {
    text = readFileSync(lock, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const holder = JSON.parse(text) as Holder;
    if (!Number.isInteger(holder.pid) || typeof holder.host !== 'string') return { text, holder: undefined };
    return { text, holder };
  } catch {
    return { text, holder: undefined };
  }
}

/**
 * Whether `holder` may still be writing. Another host's process cannot be checked: assumed alive.
 * This process's own pid is an earlier process that had the same pid (a container's pid 1).
 */
function alive(holder: Holder | undefined): boolean {
  if (holder === undefined) return false;
  if (holder.host !== hostname()) return true;
  if (holder.pid === process.pid) return false;
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes the stale lock whose text was `stale`, unless another process is already taking it over. */
function takeOver(lock: string, stale: string): void {
  const guard = `${lock}.takeover`;
  const text = `${JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() })}\n`;
  if (!create(guard, text)) {
    const other = read(guard);
    if (other !== undefined && alive(other.holder)) {
      throw new TrailLockError(`the lock ${lock} is being taken over by process ${other.holder?.pid}`);
    }
    // A takeover cut short by a crash: clear it and let the next attempt decide.
    unlinkQuietly(guard);
    return;
  }
  try {
    if (read(lock)?.text === stale) unlinkQuietly(lock);
  } finally {
    unlinkQuietly(guard);
  }
}

/** Removes the lock if it is still this process's. */
function release(lock: string, text: string): void {
  if (read(lock)?.text === text) unlinkQuietly(lock);
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // Already gone.
  }
}
