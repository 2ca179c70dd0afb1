/**
 * A file trail made ready for appends when it is opened: created when missing, and a last line cut
 * by a crash (no final newline, or not an entry) moved aside to `<file>.torn-<time>`, so that the
 * chain continues from the last whole entry, never from a wrong hash.
 */
import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../observability/logger.js';
import type { AuditHead } from './entry.js';
import { headOfLine, lastLine } from './file-read.js';

const REFUSED = new Set(['EACCES', 'EPERM', 'EROFS']);

/** The trail's head, its size and inode once its tail is whole. */
export async function repairTail(
  file: string,
  logger: Logger,
): Promise<{ head: AuditHead | undefined; size: number; ino: number }> {
  let handle: FileHandle;
  let created = false;
  try {
    handle = await open(file, constants.O_RDWR);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw refused(file, err);
    handle = await open(file, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL, 0o640).catch(
      (e: unknown) => {
        throw refused(file, e);
      },
    );
    created = true;
  }
  try {
    const { size, ino } = await handle.stat();
    // A new file's name must survive a crash too.
    if (created) await syncDirectory(path.dirname(file));
    if (size === 0) return { head: undefined, size, ino };
    const last = await lastLine(handle, size);
    let head = last.complete ? headOfLine(last.text) : undefined;
    if (head !== undefined) return { head, size, ino };

    const aside = await moveAside(file, handle, last.start, size);
    logger.warn(
      { audit_trail: file, moved_to: aside, bytes: size - last.start },
      'audit trail: a last line cut by a crash was moved aside',
    );
    if (last.start === 0) return { head: undefined, size: 0, ino };
    const previous = await lastLine(handle, last.start);
    head = headOfLine(previous.text);
    if (head === undefined) {
      throw new Error(
        `audit trail ${file}: the entry before the torn line cannot be read either; ` +
          'run `gateway audit verify` and repair the file',
      );
    }
    return { head, size: last.start, ino };
  } finally {
    await handle.close();
  }
}

/** Copies bytes `from`..`to` of the trail to a new `<file>.torn-<time>`, then cuts them off the trail. */
async function moveAside(file: string, handle: FileHandle, from: number, to: number): Promise<string> {
  const torn = Buffer.alloc(to - from);
  await handle.read(torn, 0, torn.length, from);
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  let aside = `${file}.torn-${stamp}`;
  let out: FileHandle | undefined;
  for (let n = 1; out === undefined; n++) {
    try {
      out = await open(aside, 'wx', 0o640);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw refused(aside, err);
      aside = `${file}.torn-${stamp}-${n}`;
    }
  }
  try {
    await out.write(torn);
    await out.sync();
  } finally {
    await out.close();
  }
  await syncDirectory(path.dirname(file));
  // Only once the torn bytes are safe elsewhere are they cut from the trail.
  await handle.truncate(from);
  await handle.sync();
  return aside;
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function refused(file: string, err: unknown): Error {
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== undefined && REFUSED.has(code)) {
    return new Error(`audit trail ${file} is not writable (${code})`, { cause: err });
  }
  return err instanceof Error ? err : new Error(String(err));
}
