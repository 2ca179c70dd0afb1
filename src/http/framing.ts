/**
 * Requests that never reach the pipeline: what Node's HTTP parser refuses (`clientError`: 400, 408,
 * 431), `CONNECT` (an authority-form target) and an `Expect` other than 100-continue (417). They get the error envelope on the raw socket, a
 * request id, a log line and a metric like any other request, and the connection is closed.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { errors, type GatewayError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { writeError, writeSocketError } from './envelope.js';

/** Installs the `clientError`, `connect` and `checkExpectation` listeners on the API server. */
export function answerFramingErrors(server: Server, deps: { logger: Logger; metrics: Metrics }): void {
  const answer = (socket: Socket, error: GatewayError, reason: string) => {
    const requestId = randomUUID();
    writeSocketError(socket, requestId, error);
    deps.metrics.requests.inc({
      operation: 'unmatched',
      method: 'OTHER',
      status_class: `${Math.floor(error.status / 100)}xx`,
    });
    deps.logger.info(
      { request_id: requestId, operation: 'unmatched', status: error.status, reason },
      'request',
    );
  };

  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    // A response already under way cannot be replaced by an error: cut the connection.
    const inResponse = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || !socket.writable || inResponse?.headersSent) {
      socket.destroy();
      return;
    }
    const error =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? errors.headersTooLarge()
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? errors.requestTimeout()
          : errors.malformedRequest();
    answer(socket, error, err.code ?? 'parse_error');
  });

  server.on('connect', (_req, socket: Socket) => {
    answer(socket, errors.badTarget('must be a path starting with "/"'), 'connect');
  });

  // Node answers an `Expect` other than 100-continue with a bare 417 unless told otherwise.
  server.on('checkExpectation', (_req, res) => {
    const requestId = randomUUID();
    res.setHeader('RequestID', requestId);
    writeError(res, requestId, errors.expectationFailed());
    deps.metrics.requests.inc({ operation: 'unmatched', method: 'OTHER', status_class: '4xx' });
    deps.logger.info(
      { request_id: requestId, operation: 'unmatched', status: 417, reason: 'expectation' },
      'request',
    );
  });
}
