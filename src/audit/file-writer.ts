/**
 * The appends of a file trail: each entry written at the end of the file with `O_DSYNC`, so that the
 * write returns once the line is durable. Appends that arrive while a write is in flight go out
 * together in the next one (a group commit: one sync for many entries under load). Before each
 * write the path must still name the file this process writes, at the size it left, writable: an
 * entry never goes to a file moved aside, replaced, cut, appended to by another, or made read-only.
 * A write that fails is cut back off, so the next entry never follows a partial line.
 */
import { constants, statSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { type AuditEntry, type AuditHead, type NewAuditEntry, sealEntry } from './entry.js';

interface Waiting {
  readonly entry: NewAuditEntry;
  resolve(entry: AuditEntry): void;
  reject(err: unknown): void;
}

/** Where a writer starts: the whole entries' size, the last of them, the file's inode. */
interface Start {
  readonly head: AuditHead | undefined;
  readonly size: number;
  readonly ino: number;
}

/** The one writer of a file trail in this process (see the file's comment). */
export class TrailWriter {
  readonly #file: string;
  readonly #handle: FileHandle;
  readonly #ino: number;
  readonly #now: () => number;
  #head: AuditHead | undefined;
  #size: number;
  #waiting: Waiting[] = [];
  #busy = false;
  #idle: Promise<void> = Promise.resolve();
  #failed = false;

  private constructor(file: string, handle: FileHandle, start: Start, now: () => number) {
    this.#file = file;
    this.#handle = handle;
    this.#ino = start.ino;
    this.#head = start.head;
    this.#size = start.size;
    this.#now = now;
  }

  /** A writer of `file`, whose whole entries end at `start.size` with `start.head`. */
  static async open(file: string, start: Start, now: () => number): Promise<TrailWriter> {
    return new TrailWriter(file, await open(file, constants.O_WRONLY | constants.O_DSYNC), start, now);
  }

  get head(): AuditHead | undefined {
    return this.#head;
  }

  /** Bytes of whole entries: what a reader may read without meeting a line being written. */
  get size(): number {
    return this.#size;
  }

  /** False once a write failed, until one succeeds. */
  get healthy(): boolean {
    return !this.#failed;
  }

  /** Appends `entry`; resolves once it is durable. */
  append(entry: NewAuditEntry): Promise<AuditEntry> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ entry, resolve, reject });
      if (!this.#busy) {
        this.#busy = true;
        this.#idle = this.#drain();
      }
    });
  }

  /** Waits for the appends already made, then closes the file. */
  async close(): Promise<void> {
    await this.#idle;
    await this.#handle.close();
  }

  async #drain(): Promise<void> {
    try {
      while (this.#waiting.length > 0) {
        const batch = this.#waiting;
        this.#waiting = [];
        try {
          const sealed = await this.#write(batch.map((w) => w.entry));
          this.#failed = false;
          batch.forEach((w, i) => w.resolve(sealed[i] as AuditEntry));
        } catch (err) {
          this.#failed = true;
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      this.#busy = false;
    }
  }

  async #write(entries: NewAuditEntry[]): Promise<AuditEntry[]> {
    this.#check();
    let head = this.#head;
    let text = '';
    const sealed = entries.map((entry) => {
      const next = sealEntry(head, entry, this.#now());
      head = next.head;
      // The canonical JSON with its hash: keys in sorted order, `hash` last.
      text += `${next.canonical.slice(0, -1)},"hash":"${next.entry.hash}"}\n`;
      return next.entry;
    });
    const bytes = Buffer.from(text, 'utf8');
    try {
      await this.#handle.write(bytes, 0, bytes.length, this.#size);
    } catch (err) {
      // Nothing of a failed write may stay: the next entry would follow a broken line.
      await this.#handle.truncate(this.#size).catch(() => undefined);
      throw new Error(`audit trail ${this.#file} could not be written (${code(err)})`, { cause: err });
    }
    this.#size += bytes.length;
    this.#head = head;
    return sealed;
  }

  /** Throws unless the path still names this writer's file, as it left it, writable. */
  #check(): void {
    let found;
    try {
      found = statSync(this.#file);
    } catch (err) {
      throw new Error(`audit trail ${this.#file} is gone (${code(err)})`, { cause: err });
    }
    if (found.ino !== this.#ino) throw new Error(`audit trail ${this.#file} was moved or replaced`);
    if (found.size !== this.#size) throw new Error(`audit trail ${this.#file} was changed by another writer`);
    if ((found.mode & 0o222) === 0) throw new Error(`audit trail ${this.#file} was made read-only`);
  }
}

function code(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
}
