/**
 * The audit trail as a JSON-lines file, one entry a line, with one writer (`file-lock.ts`): opened
 * with its torn tail repaired (`file-repair.ts`), appended to durably (`file-writer.ts`), queried in
 * memory (`memory-query.ts`). A process opens each trail once: a second open (a reload) shares it.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../observability/logger.js';
import type { AuditEntry } from './entry.js';
import { acquireTrailLock } from './file-lock.js';
import { readFileTrail, readLines } from './file-read.js';
import { repairTail } from './file-repair.js';
import { TrailWriter } from './file-writer.js';
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
  const dir = path.dirname(file);
  const dirStat = await stat(dir).catch((err: NodeJS.ErrnoException) => {
    throw new Error(`the directory of audit trail ${file} cannot be used (${err.code ?? err.message})`);
  });
  if (!dirStat.isDirectory()) throw new Error(`the directory of audit trail ${file} is not a directory`);
  const release = acquireTrailLock(file);
  let writer: TrailWriter;
  try {
    writer = await TrailWriter.open(file, await repairTail(file, deps.logger), deps.now ?? Date.now);
  } catch (err) {
    release();
    throw err;
  }
  let closed = false;

  return {
    kind: 'file',
    where: file,
    async append(entry) {
      if (closed) throw new Error(`audit trail ${file} is closed`);
      return writer.append(entry);
    },

    async list(query: AuditListQuery): Promise<AuditPage> {
      const matches = matcher(query);
      const matching: AuditEntry[] = [];
      // Only what was appended when the query began: never a line being written.
      for await (const line of readLines(file, writer.size)) {
        if (!line.complete) continue;
        const entry = parseEntry(line.text);
        if (entry !== undefined && matches(entry)) matching.push(entry);
      }
      return pageOf(matching, query);
    },

    walk: () => readFileTrail(file, writer.size),
    head: async () => writer.head,
    ready: () => writer.healthy && !closed,
    async close() {
      closed = true;
      // Appends already made finish first.
      await writer.close();
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
