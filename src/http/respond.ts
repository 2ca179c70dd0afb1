/**
 * Writing successful responses. Headers set by earlier stages (`RequestID`, `Preference-Applied`)
 * are already on the response; these add the status, the body and its framing. HEAD gets the headers only.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import type { RequestContext } from './context.js';

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
