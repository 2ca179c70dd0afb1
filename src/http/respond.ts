/**
 * Writing responses. Every answer is one `writeHead` with a flat `[name, value, …]` list: the
 * gateway's own headers the stages gathered (`RequestID`, `Preference-Applied`, …, in
 * `ctx.headers`) and the answer's own (its type, its length). Node takes such a list as it is, with
 * no `setHeader` per header and no object to walk. HEAD gets the headers only.
 */
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { errors } from '../errors.js';
import type { UpstreamAnswer } from '../upstream/answer.js';
import type { RequestContext } from './context.js';

/** A flat header list: `[name, value, name, value, …]`. */
export type HeaderList = readonly string[];

/** The `Content-Type` of every JSON answer. */
export const JSON_TYPE: HeaderList = Object.freeze(['Content-Type', 'application/json; charset=utf-8']);

/** Writes the status line and headers: the gateway's own (`ctx.headers`), then `own`. */
export function writeHead(ctx: RequestContext, status: number, own: HeaderList): void {
  ctx.res.writeHead(status, ctx.headers.length === 0 ? (own as string[]) : joined(ctx.headers, own));
}

/**
 * `first` then `then` (then one more header), as a new list: pushed one by one, not `concat`, whose
 * generic path (arrays and loose values mixed) is slow on every answer.
 */
function joined(first: HeaderList, then: HeaderList, name?: string, value?: string): string[] {
  const list = first.slice();
  for (let i = 0; i < then.length; i++) list.push(then[i] as string);
  if (name !== undefined) list.push(name, value as string);
  return list;
}

/** Sends `value` as JSON with `status`. */
export function sendJson(ctx: RequestContext, status: number, value: unknown): void {
  sendBytes(ctx, status, Buffer.from(JSON.stringify(value)), JSON_TYPE);
}

/** Sends `body` with `status` and `headers` (which should name its `Content-Type`). */
export function sendBytes(ctx: RequestContext, status: number, body: Buffer, headers: HeaderList): void {
  ctx.res.writeHead(status, joined(ctx.headers, headers, 'Content-Length', String(body.length)));
  if (ctx.req.method === 'HEAD') {
    ctx.res.end();
    return;
  }
  ctx.bytesOut = body.length;
  ctx.res.end(body);
}

/** Sends a status with no body (304). */
export function sendEmpty(ctx: RequestContext, status: number, headers: HeaderList): void {
  writeHead(ctx, status, headers);
  ctx.res.end();
}

/** An object of headers as a flat list (a value given as a list repeats its name). */
export function headerList(headers: Readonly<Record<string, string | readonly string[]>>): string[] {
  const list: string[] = [];
  appendHeaders(list, headers);
  return list;
}

/**
 * Appends `headers` to `list` as name, value pairs; with `contentLength`, that is the value of
 * `content-length` (in its place, or last when the headers have none).
 */
function appendHeaders(
  list: string[],
  headers: Readonly<Record<string, string | readonly string[]>>,
  contentLength?: string,
): void {
  let length = contentLength;
  for (const name of Object.keys(headers)) {
    const value = headers[name] as string | readonly string[];
    if (length !== undefined && name === 'content-length') {
      list.push(name, length);
      length = undefined;
    } else if (typeof value === 'string') list.push(name, value);
    else for (const v of value) list.push(name, v);
  }
  if (length !== undefined) list.push('content-length', length);
}

/**
 * Relays an upstream's answer: its status, its body-describing headers and its body, streamed as it
 * arrives (or written whole when it was held: then at once, with no promise). A failure mid-body
 * rejects (the connection is then cut: the status is already sent).
 */
export function relay(ctx: RequestContext, answer: UpstreamAnswer): void | Promise<void> {
  const upstreamId = answer.upstreamRequestId;
  if (upstreamId !== undefined) ctx.log.upstream_request_id = upstreamId;
  const { body } = answer;
  const bodiless = ctx.req.method === 'HEAD' || answer.status === 204 || answer.status === 304;
  const held = Buffer.isBuffer(body);
  // The head: the gateway's headers and the answer's, in one list. The bytes held are the body: their
  // length is its length (a HEAD, and a body that streams, keep the upstream's word).
  const list = ctx.headers.slice();
  appendHeaders(list, answer.headers, held && !bodiless ? String(body.length) : undefined);
  ctx.res.writeHead(answer.status, list);
  if (held) {
    if (!bodiless) ctx.bytesOut = body.length;
    ctx.res.end(bodiless ? undefined : body);
    return undefined;
  }
  if (bodiless) {
    body.resume(); // nothing to relay; let the upstream connection go back to its pool
    ctx.res.end();
    return undefined;
  }
  return pipe(body, ctx);
}

/**
 * Pipes `body` into the response, counting its bytes; resolves when the response has finished,
 * rejects when `body` fails (the client's connection is then cut) and stops reading `body` when the
 * client goes away. (Not `stream/promises` `pipeline`: it creates and aborts an AbortController per
 * call, whose DOMException costs more than the rest of a small relay.)
 */
export function pipe(body: Readable, ctx: RequestContext): Promise<void> {
  const res: ServerResponse = ctx.res;
  return new Promise<void>((resolve, reject) => {
    const cut = (err: unknown) => {
      res.destroy();
      reject(err);
    };
    body.on('data', (chunk: Buffer) => {
      ctx.bytesOut += chunk.length;
    });
    body.once('error', cut);
    // A source closed before its end without an error is cut too (never passed off as complete).
    body.once('close', () => {
      if (!body.readableEnded) cut(errors.upstreamBadAnswer('truncated'));
    });
    res.once('close', () => {
      if (res.writableFinished) {
        resolve();
      } else {
        body.destroy();
        reject(errors.clientGone());
      }
    });
    body.pipe(res);
  });
}
