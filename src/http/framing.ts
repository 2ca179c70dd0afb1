/**
 * Requests that never reach the pipeline: what Node's HTTP parser refuses (`clientError`: 400, 408,
 * 431) and `CONNECT` (an authority-form target). They get the error envelope on the raw socket, a
 * request id, a log line and a metric like any other request, and the connection is closed.
 */
import { randomUUID } from 'node:crypto';
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { errors, type GatewayError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import { type Metrics, requestRecorder } from '../observability/metrics.js';
import { writeSocketError } from './envelope.js';

const GONE = new Set(['ECONNRESET', 'EPIPE', 'HPE_INVALID_EOF_STATE']);

/** Installs the `clientError` and `connect` listeners on the API server. */
export function answerFramingErrors(server: Server, deps: { logger: Logger; metrics: Metrics }): void {
  const recorder = requestRecorder(deps.metrics);
  const answer = (socket: Socket, error: GatewayError, reason: string) => {
    const requestId = randomUUID();
    writeSocketError(socket, requestId, error);
    recorder.record('unmatched', 'OTHER', error.status, 0);
    deps.logger.info(
      { request_id: requestId, operation: 'unmatched', status: error.status, reason },
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
      pending.once('finish', () => answer(socket, error, err.code ?? 'parse_error'));
      pending.once('close', () => pending.writableFinished || socket.destroy());
      return;
    }
    answer(socket, error, err.code ?? 'parse_error');
  });

  server.on('connect', (_req, socket: Socket) => {
    answer(socket, errors.badTarget('must be a path starting with "/"'), 'connect');
  });
}
