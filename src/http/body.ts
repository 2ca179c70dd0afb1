/**
 * Reads a request body once, under the body limit, and holds it until it has been verified: in
 * memory up to a threshold, beyond it in a private temporary file. Every way a client can fail (too
 * large, stalled, gone, too slow for the deadline) ends in one catalogue error, never a crash.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { type FileHandle, open, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import { errors } from '../errors.js';

/** A request body read once under the body limit and held until it has been verified. */
export interface HeldBody {
  /** Its length in bytes. */
  readonly size: number;
  /** A new stream of its bytes (from memory, or from the temporary file it was spooled to). */
  stream(): Readable;
  /** Removes the temporary file, if any (a promise then). Safe to call twice. */
  dispose(): void | Promise<void>;
}

/** How a body is read: its limits, where it spools, and who sees its bytes as they arrive. */
export interface BodyOptions {
  /** Largest body accepted, in bytes (413 beyond). */
  limit: number;
  /** Bytes held in memory; a larger body goes to a temporary file. */
  memoryThreshold: number;
  /** Folder of the temporary files. */
  tmpDir: string;
  /** Longest pause between two chunks, in ms (408 beyond). */
  idleTimeout: number;
  /** The request's deadline; its reason (a 504) is the rejection when it fires. */
  signal: AbortSignal;
  /** Sees every chunk as it arrives (the signature is hashed here). */
  onChunk?: (chunk: Buffer) => void;
}

/** Throws the catalogue's 413 when the declared `Content-Length` is over `limit`, before any byte is read. */
export function checkDeclaredLength(req: IncomingMessage, limit: number): void {
  const declared = req.headers['content-length'];
  if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > limit) {
    throw errors.bodyTooLarge(limit);
  }
}

/**
 * Whether the request's framing announces a body (RFC 9112 §6.3): a `Transfer-Encoding`, or a
 * `Content-Length` other than 0. Without either there is nothing to read (no listener, no timer).
 */
function framesBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** An empty body, for requests that have none to read. */
const EMPTY_BODY: HeldBody = memoryBody(Buffer.alloc(0));

/**
 * The empty body of a request that has none to read (its framing announces none, or it was read
 * already), at once; undefined when there is a body to read (with `readBody`).
 */
export function emptyBody(req: IncomingMessage): HeldBody | undefined {
  return req.readableEnded || (!req.destroyed && !framesBody(req)) ? EMPTY_BODY : undefined;
}

/**
 * Reads the whole body of `req`. Rejects with a `GatewayError` (413, 408, 400 when the client goes
 * away, or the deadline's 504); on every path listeners, timers and the temporary file are cleaned up.
 */
export function readBody(req: IncomingMessage, options: BodyOptions): Promise<HeldBody> {
  try {
    checkDeclaredLength(req, options.limit);
  } catch (err) {
    return Promise.reject(err);
  }
  if (options.signal.aborted) return Promise.reject(options.signal.reason);
  if (req.readableEnded) return Promise.resolve(EMPTY_BODY);
  if (req.destroyed) return Promise.reject(errors.bodyAborted());
  if (!framesBody(req)) return Promise.resolve(EMPTY_BODY);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let reading = true;
    let spooling = false;
    let file: { handle: FileHandle; path: string } | undefined;
    let writes: Promise<void> = Promise.resolve();
    let writeError: unknown;
    let timer: NodeJS.Timeout | undefined;

    const armIdle = () => {
      clearTimeout(timer);
      timer = setTimeout(() => fail(errors.requestTimeout()), options.idleTimeout);
    };
    const stop = () => {
      reading = false;
      clearTimeout(timer);
      req
        .off('data', onData)
        .off('end', onEnd)
        .off('aborted', onGone)
        .off('error', onGone)
        .off('close', onGone);
      options.signal.removeEventListener('abort', onAbort);
    };
    const removeFile = async () => {
      if (!file) return;
      await file.handle.close().catch(() => {});
      await rm(file.path, { force: true }).catch(() => {});
    };
    function fail(err: unknown) {
      if (!reading) return;
      stop();
      req.pause(); // stop reading; whoever answers decides what happens to the connection
      void writes.then(removeFile).then(() => reject(err));
    }
    function spool(chunk: Buffer) {
      req.pause();
      clearTimeout(timer); // our own disk write is not the client being idle
      writes = writes
        .then(async () => {
          if (!file) {
            const target = path.join(options.tmpDir, `gateway-body-${randomUUID()}`);
            file = { handle: await open(target, 'wx', 0o600), path: target };
            for (const held of chunks.splice(0)) await file.handle.write(held);
          }
          await file.handle.write(chunk);
          if (reading) {
            armIdle();
            req.resume();
          }
        })
        .catch((err) => {
          writeError = err;
          fail(err);
        });
    }
    function onData(chunk: Buffer) {
      if (!reading) return;
      size += chunk.length;
      if (size > options.limit) return fail(errors.bodyTooLarge(options.limit));
      try {
        options.onChunk?.(chunk);
      } catch (err) {
        return fail(err);
      }
      if (!spooling && size <= options.memoryThreshold) {
        chunks.push(chunk);
        return armIdle();
      }
      spooling = true;
      spool(chunk);
    }
    function onEnd() {
      if (!reading) return;
      stop();
      void writes
        .then(async () => {
          if (writeError !== undefined) return removeFile().then(() => reject(writeError));
          if (!file) return resolve(memoryBody(Buffer.concat(chunks, size)));
          await file.handle.close();
          resolve(fileBody(file.path, size));
        })
        .catch((err) => removeFile().then(() => reject(err)));
    }
    // `close` before `end` means the client is gone too, whatever the parser had received.
    const onGone = () => fail(errors.bodyAborted());
    const onAbort = () => fail(options.signal.reason);

    req.on('data', onData).on('end', onEnd).on('aborted', onGone).on('error', onGone).on('close', onGone);
    options.signal.addEventListener('abort', onAbort, { once: true });
    armIdle();
    req.resume();
  });
}

function memoryBody(bytes: Buffer): HeldBody {
  return {
    size: bytes.length,
    stream: () => Readable.from(bytes.length > 0 ? [bytes] : [], { objectMode: false }),
    dispose: () => undefined,
  };
}

function fileBody(file: string, size: number): HeldBody {
  return {
    size,
    stream: () => createReadStream(file),
    dispose: () => rm(file, { force: true }),
  };
}
