/**
 * Writing successful responses. Headers set by earlier stages (`RequestID`, `Preference-Applied`)
 * are already on the response; these add the status, the body and its framing. HEAD gets the headers only.
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { errors } from '../errors.js';
import type { UpstreamAnswer } from '../upstream/answer.js';
import type { RequestContext } from './context.js';

/** The `Content-Type` of every JSON answer. */
export const JSON_TYPE: Readonly<OutgoingHttpHeaders> = Object.freeze({
  'Content-Type': 'application/json; charset=utf-8',
});

/** Sends `value` as JSON with `status`. */
export function sendJson(
  ctx: RequestContext,
  status: number,
  value: unknown,
  headers: OutgoingHttpHeaders = {},
): void {
  sendBytes(ctx, status, Buffer.from(JSON.stringify(value)), {
    'Content-Type': 'application/json; charset=utf-8',
    ...headers,
  });
}

/** Sends `body` with `status` and `headers` (which should name its `Content-Type`). */
export function sendBytes(
  ctx: RequestContext,
  status: number,
  body: Buffer,
  headers: OutgoingHttpHeaders,
): void {
  const { res } = ctx;
  res.writeHead(status, { ...headers, 'Content-Length': body.length });
  res.end(ctx.req.method === 'HEAD' ? undefined : body);
}

/** Sends a status with no body (304). */
export function sendEmpty(ctx: RequestContext, status: number, headers: OutgoingHttpHeaders): void {
  ctx.res.writeHead(status, headers);
  ctx.res.end();
}

/**
 * Relays an upstream's answer: its status, its body-describing headers and its body, streamed as it
 * arrives (or written whole when it was held). A failure mid-body rejects (the connection is then
 * cut: the status is already sent).
 */
export async function relay(ctx: RequestContext, answer: UpstreamAnswer): Promise<void> {
  const upstreamId = answer.upstreamRequestId;
  if (upstreamId !== undefined) ctx.log.upstream_request_id = upstreamId;
  const { body } = answer;
  const bodiless = ctx.req.method === 'HEAD' || answer.status === 204 || answer.status === 304;
  if (Buffer.isBuffer(body)) {
    // The bytes held are the body: their length is its length (a HEAD keeps the upstream's word).
    const headers = bodiless ? answer.headers : { ...answer.headers, 'content-length': String(body.length) };
    ctx.res.writeHead(answer.status, headers);
    ctx.res.end(bodiless ? undefined : body);
    return;
  }
  ctx.res.writeHead(answer.status, answer.headers);
  if (bodiless) {
    body.resume(); // nothing to relay; let the upstream connection go back to its pool
    ctx.res.end();
    return;
  }
  await pipe(body, ctx.res);
}

/**
 * Pipes `body` into `res`; resolves when `res` has finished, rejects when `body` fails (the client's
 * connection is then cut) and stops reading `body` when the client goes away. (Not
 * `stream/promises` `pipeline`: it creates and aborts an AbortController per call, whose
 * DOMException costs more than the rest of a small relay.)
 */
export function pipe(body: Readable, res: ServerResponse): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const cut = (err: unknown) => {
      res.destroy();
      reject(err);
    };
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
