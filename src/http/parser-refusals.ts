/**
 * Requests that never reach the pipeline: what Node's HTTP parser refuses (`clientError`: 400, 408,
 * 431) and `CONNECT` (an authority-form target). They get the error envelope on the raw socket, a
 * request id, a log line and a metric like any other request, and the connection is closed.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { errors, type GatewayError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { requestRecorder } from '../observability/request-recorder.js';
import { writeSocketError } from './envelope.js';
import { readRefused } from './refused.js';

const GONE = new Set(['ECONNRESET', 'EPIPE', 'HPE_INVALID_EOF_STATE']);

/** Methods counted by name (`method` label); any other is `OTHER`, as for answered requests. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * Installs the `clientError` and `connect` listeners on the API server. A refused request's
 * `duration_ms` counts from its connection's arrival (the parser does not say when the request's
 * first byte came).
 */
export function answerParserRefusals(server: Server, deps: { logger: Logger; metrics: Metrics }): void {
  const recorder = requestRecorder(deps.metrics);
  const accepted = new WeakMap<Socket, number>();
  server.on('connection', (socket: Socket) => accepted.set(socket, performance.now()));
  const answer = (socket: Socket, error: GatewayError, reason: string, raw?: Buffer) => {
    const requestId = randomUUID();
    const bytesOut = writeSocketError(socket, requestId, error);
    const seconds = (performance.now() - (accepted.get(socket) ?? performance.now())) / 1000;
    const read = readRefused(raw);
    const method = read.method !== null && METHODS.has(read.method) ? read.method : 'OTHER';
    recorder.record('unmatched', method, error.status, seconds);
    deps.logger.info(
      {
        request_id: requestId,
        operation: 'unmatched',
        method: read.method,
        path: read.path,
        status: error.status,
        duration_ms: Math.round(seconds * 1e6) / 1000,
        client: socket.remoteAddress ?? null,
        bytes_in: 0,
        bytes_out: bytesOut,
        ...(read.user_agent === undefined ? {} : { user_agent: read.user_agent }),
        reason,
        error_code: error.code,
      },
      'request',
    );
  };

  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    // Nobody left to answer: the client reset the connection or closed it in the middle of a request.
    if (GONE.has(err.code ?? '') || !socket.writable) {
      socket.destroy();
      return;
    }
    const error =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? errors.headersTooLarge()
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? errors.headersTimeout()
          : errors.malformedRequest();
    const pending = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (pending && !pending.writableFinished) {
      // Pipelined behind a request still being answered: that answer goes first, then this one.
      pending.once('finish', () => answer(socket, error, err.code ?? 'parse_error', rawOf(err)));
      pending.once('close', () => pending.writableFinished || socket.destroy());
      return;
    }
    answer(socket, error, err.code ?? 'parse_error', rawOf(err));
  });

  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    const target = Buffer.from(`${req.method} ${req.url} HTTP/1.1\r\n`, 'latin1');
    answer(socket, errors.badTarget('must be a path starting with "/"'), 'connect', target);
  });
}

/** The bytes Node's parser was reading when it failed (`rawPacket`), when it says. */
function rawOf(err: NodeJS.ErrnoException): Buffer | undefined {
  const raw = (err as { rawPacket?: unknown }).rawPacket;
  return Buffer.isBuffer(raw) ? raw : undefined;
}
