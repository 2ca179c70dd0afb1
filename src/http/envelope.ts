/**
 * The one place an error becomes bytes: the API's error envelope, on every error the gateway writes.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { errors, GatewayError } from '../errors.js';
import type { RequestContext } from './context.js';
import type { Deadline } from './deadline.js';
import { headerList, writeHead } from './respond.js';

/** The envelope's JSON text for `err` on request `requestId`. */
function envelope(err: GatewayError, requestId: string): string {
  return JSON.stringify({
    http_status: err.status,
    timestamp: new Date().toISOString(),
    request_id: requestId,
    errors: [{ context: err.context, message: err.message }, ...(err.details ?? [])],
  });
}

/**
 * The catalogue error for anything thrown: a `GatewayError` as it is; the reason the request's work
 * was stopped (its deadline's 504, the client gone) when it was (a library's AbortError); otherwise
 * a generic 500.
 */
export function toGatewayError(err: unknown, deadline: Deadline | undefined): GatewayError {
  if (err instanceof GatewayError) return err;
  return deadline?.stopped ?? errors.internal();
}

/**
 * Writes `err` as the response, with the gateway's own headers. When the request body was not read
 * to its end (a 413, a 408), the connection is closed after the answer rather than left with unread
 * bytes. A response already started cannot be turned into an error: the connection is cut instead.
 */
export function writeError(ctx: RequestContext, err: GatewayError): void {
  const { res } = ctx;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // A redirect has no body; every error is our envelope.
  const body = err.status < 400 ? '' : envelope(err, ctx.id);
  const own: string[] = body === '' ? [] : ['Content-Type', 'application/json; charset=utf-8'];
  if (err.headers) own.push(...headerList(err.headers));
  own.push('Content-Length', String(Buffer.byteLength(body)));
  if (!res.req.complete && !ctx.headers.includes('Connection')) own.push('Connection', 'close');
  writeHead(ctx, err.status, own);
  if (res.req.method === 'HEAD') {
    res.end();
    return;
  }
  ctx.bytesOut = Buffer.byteLength(body);
  res.end(body);
}

/**
 * Answers on a raw socket when Node's HTTP parser refused the request (`clientError`): there is no
 * response object then, so the status line and headers are written by hand, and the socket closed.
 * Returns the body bytes written (the log line's `bytes_out`).
 */
export function writeSocketError(socket: Socket, requestId: string, err: GatewayError): number {
  if (!socket.writable) {
    socket.destroy();
    return 0;
  }
  const body = envelope(err, requestId);
  socket.end(
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? 'Error'}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `RequestID: ${requestId}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
  return Buffer.byteLength(body);
}
