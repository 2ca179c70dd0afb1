/**
 * The one place an error becomes bytes: the API's error envelope, on every error the gateway writes.
 */
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { errors, GatewayError } from '../errors.js';

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
 * The catalogue error for anything thrown: a `GatewayError` as it is; the deadline's reason when the
 * request's deadline has fired (a library's AbortError); otherwise a generic 500.
 */
export function toGatewayError(err: unknown, deadline: AbortSignal | undefined): GatewayError {
  if (err instanceof GatewayError) return err;
  if (deadline?.aborted && deadline.reason instanceof GatewayError) return deadline.reason;
  return errors.internal();
}

/**
 * Writes `err` as the response. When the request body was not read to its end (a 413, a 408), the
 * connection is closed after the answer rather than left with unread bytes. A response already
 * started cannot be turned into an error: the connection is cut instead.
 */
export function writeError(res: ServerResponse, requestId: string, err: GatewayError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // A redirect has no body; every error is our envelope.
  const body = err.status < 400 ? '' : envelope(err, requestId);
  const headers: Record<string, string | number> = {
    ...(body === '' ? {} : { 'Content-Type': 'application/json; charset=utf-8' }),
    ...err.headers,
    'Content-Length': Buffer.byteLength(body),
  };
  if (!res.req.complete) headers.Connection = 'close';
  res.writeHead(err.status, headers);
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

/**
 * Answers on a raw socket when Node's HTTP parser refused the request (`clientError`): there is no
 * response object then, so the status line and headers are written by hand, and the socket closed.
 */
export function writeSocketError(socket: Socket, requestId: string, err: GatewayError): void {
  if (!socket.writable) {
    socket.destroy();
    return;
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
}
