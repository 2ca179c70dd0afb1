/**
 * The audit trail as a JSON-lines file, one entry a line, with one writer (`file-lock.ts`). Each
 * append opens the file, checks that it is still the file the chain continues (same inode, the size
 * this process left), writes the line at its end and syncs it before it resolves; a write that fails
 * is cut back off. Appends within the process take turns. A process opens each trail once: a second
 * open (a reload) shares it.
 */
import { constants } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../observability/logger.js';
import { type AuditEntry, type AuditHead, headOf, type NewAuditEntry, sealEntry } from './entry.js';
import { acquireTrailLock } from './file-lock.js';
import { readFileTrail, readLines } from './file-read.js';
import { repairTail } from './file-repair.js';
import { matcher, pageOf } from './memory-query.js';
import type { AuditListQuery, AuditPage } from './query.js';
import type { AuditStore } from './store.js';

/** What opening a file trail needs. */
export interface FileStoreDeps {
  readonly logger: Logger;
  readonly now?: () => number;
}

interface Shared {
  readonly opening: Promise<AuditStore>;
  refs: number;
}

/** The trails this process has open, by absolute path. */
const openTrails = new Map<string, Shared>();

/**
 * Opens the trail `file` for writing: refused when its directory is not writable or another process
 * holds it; a torn last line is moved aside first. Each result must be closed once.
 */
export async function openFileAuditStore(file: string, deps: FileStoreDeps): Promise<AuditStore> {
  const absolute = path.resolve(file);
  let shared = openTrails.get(absolute);
  if (shared === undefined) {
    const opening = openTrail(absolute, deps);
    shared = { opening, refs: 0 };
    openTrails.set(absolute, shared);
    opening.catch(() => openTrails.delete(absolute));
  }
  shared.refs++;
  const entry = shared;
  let store: AuditStore;
  try {
    store = await entry.opening;
  } catch (err) {
    entry.refs--;
    throw err;
  }
  let closed = false;
  return {
    ...store,
    async close() {
      if (closed) return;
      closed = true;
      if (--entry.refs > 0) return;
      openTrails.delete(absolute);
      await store.close();
    },
  };
}

async function openTrail(file: string, deps: FileStoreDeps): Promise<AuditStore> {
  const now = deps.now ?? Date.now;
  const dir = path.dirname(file);
  const dirStat = await stat(dir).catch((err: NodeJS.ErrnoException) => {
    throw new Error(`the directory of audit trail ${file} cannot be used (${err.code ?? err.message})`);
  });
  if (!dirStat.isDirectory()) throw new Error(`the directory of audit trail ${file} is not a directory`);
  const release = acquireTrailLock(file);
  let state: { head: AuditHead | undefined; size: number; ino: number };
  try {
    state = await repairTail(file, deps.logger);
  } catch (err) {
    release();
    throw err;
  }
  let { head, size } = state;
  const { ino } = state;
  let up = true;
  let closed = false;
  let queue: Promise<unknown> = Promise.resolve();

  const write = async (entry: NewAuditEntry): Promise<AuditEntry> => {
    if (closed) throw new Error(`audit trail ${file} is closed`);
    let handle;
    try {
      handle = await open(file, constants.O_WRONLY);
    } catch (err) {
      throw new Error(`audit trail ${file} cannot be opened (${(err as NodeJS.ErrnoException).code})`);
    }
    try {
      const found = await handle.stat();
      if (found.ino !== ino || found.size !== size) {
        throw new Error(`audit trail ${file} was changed by another writer (moved, replaced or cut)`);
      }
      const sealed = sealEntry(head, entry, now());
      const line = Buffer.from(`${JSON.stringify(sealed)}\n`, 'utf8');
      try {
        await handle.write(line, 0, line.length, size);
        await handle.datasync();
      } catch (err) {
        // Nothing of a failed entry may stay: the next one would follow a broken line.
        await handle.truncate(size).catch(() => undefined);
        throw err;
      }
      size += line.length;
      head = headOf(sealed);
      return sealed;
    } finally {
      await handle.close().catch(() => undefined);
    }
  };

  return {
    kind: 'file',
    where: file,
    append(entry) {
      const run = queue.then(() => write(entry));
      queue = run.then(
        () => {
          up = true;
        },
        () => {
          up = false;
        },
      );
      return run;
    },

    async list(query: AuditListQuery): Promise<AuditPage> {
      const matches = matcher(query);
      const matching: AuditEntry[] = [];
      // Only what was appended when the query began: never a line being written.
      for await (const line of readLines(file, size)) {
        if (!line.complete) continue;
        const entry = parseEntry(line.text);
        if (entry !== undefined && matches(entry)) matching.push(entry);
      }
      return pageOf(matching, query);
    },

    walk: () => readFileTrail(file, size),
    head: async () => head,
    ready: () => up && !closed,
    async close() {
      // Appends already queued finish; later ones are refused.
      await queue;
      closed = true;
      release();
    },
  };
}

/** A line as an entry, when it is one (verify says why another is not). */
function parseEntry(text: string): AuditEntry | undefined {
  try {
    const entry = JSON.parse(text) as AuditEntry;
    return typeof entry === 'object' && entry !== null && typeof entry.created_at === 'string'
      ? entry
      : undefined;
  } catch {
    return undefined;
  }
}
