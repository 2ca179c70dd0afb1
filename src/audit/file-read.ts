/**
 * Reading a JSON-lines trail: its lines in order (the last may be incomplete: being written, or cut
 * by a crash), and its last line, read from the end without reading the whole file.
 */
import { createReadStream } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import type { AuditHead } from './entry.js';
import type { TrailItem } from './store.js';

const NEWLINE = 0x0a;
const CHUNK = 64 * 1024;

/** One line of the file; `complete` is false for a last line without its newline. */
export interface Line {
  readonly number: number;
  readonly text: string;
  readonly complete: boolean;
}

/** The lines of `file`'s first `end` bytes (all of it by default). */
export async function* readLines(file: string, end?: number): AsyncGenerator<Line> {
  if (end === 0) return;
  const stream = createReadStream(file, end === undefined ? {} : { end: end - 1 });
  let pending: Buffer[] = [];
  let number = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    let start = 0;
    for (let i = chunk.indexOf(NEWLINE); i !== -1; i = chunk.indexOf(NEWLINE, start)) {
      pending.push(chunk.subarray(start, i));
      yield { number: ++number, text: Buffer.concat(pending).toString('utf8'), complete: true };
      pending = [];
      start = i + 1;
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  }
  if (pending.length > 0)
    yield { number: ++number, text: Buffer.concat(pending).toString('utf8'), complete: false };
}

/** The trail `file` as `verify` reads it: each line parsed as an entry, or why it is not one. */
export async function* readFileTrail(file: string, end?: number): AsyncGenerator<TrailItem> {
  for await (const line of readLines(file, end)) {
    const at = `line ${line.number}`;
    let item: TrailItem;
    if (!line.complete) {
      item = {
        at,
        problem: 'the last line is incomplete (being written, or cut by a crash)',
        incomplete: true,
      };
    } else {
      try {
        item = { at, entry: JSON.parse(line.text) as unknown };
      } catch {
        item = { at, problem: 'not a JSON entry' };
      }
    }
    yield item;
  }
}

/** The head an entry's line gives, or undefined when the line is not an entry. */
export function headOfLine(text: string): AuditHead | undefined {
  let entry: unknown;
  try {
    entry = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (entry === null || typeof entry !== 'object') return undefined;
  const { id, hash, created_at } = entry as Record<string, unknown>;
  if (!Number.isSafeInteger(id) || (id as number) < 1) return undefined;
  if (typeof hash !== 'string' || !/^[0-9a-f]{64}$/.test(hash)) return undefined;
  const time = typeof created_at === 'string' ? Date.parse(created_at) : NaN;
  if (Number.isNaN(time)) return undefined;
  return { id: id as number, hash, time };
}

/**
 * Where the last line of the file (`size` bytes, open as `handle`) starts, its text, and whether it
 * ends with a newline.
 */
export async function lastLine(
  handle: FileHandle,
  size: number,
): Promise<{ start: number; text: string; complete: boolean }> {
  const complete = size > 0 && (await byteAt(handle, size - 1)) === NEWLINE;
  const contentEnd = complete ? size - 1 : size;
  let tail = Buffer.alloc(0);
  let from = contentEnd;
  while (from > 0) {
    const at = Math.max(0, from - CHUNK);
    const chunk = Buffer.alloc(from - at);
    await handle.read(chunk, 0, chunk.length, at);
    tail = Buffer.concat([chunk, tail]);
    from = at;
    const newline = chunk.lastIndexOf(NEWLINE);
    if (newline !== -1) {
      const start = at + newline + 1;
      return { start, text: tail.subarray(start - from).toString('utf8'), complete };
    }
  }
  return { start: 0, text: tail.toString('utf8'), complete };
}

async function byteAt(handle: FileHandle, position: number): Promise<number | undefined> {
  const one = Buffer.alloc(1);
  const { bytesRead } = await handle.read(one, 0, 1, position);
  return bytesRead === 1 ? one[0] : undefined;
}
