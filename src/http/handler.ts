/**
 * Runs the pipeline for one request: creates the context, runs the stages in order, turns whatever
 * they throw into the error envelope, and writes the request's one log line and its metrics.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Config } from '../config/schema.js';
import type { ClientAddressing } from './client-address.js';
import type { Logger } from '../observability/logger.js';
import { type Metrics, statusClass } from '../observability/metrics.js';
import type { Stage } from '../pipeline.js';
import type { RequestContext } from './context.js';
import { errors, UpstreamStatusError } from '../errors.js';
import { toGatewayError, writeError } from './envelope.js';

/** Milliseconds between the two interim answers that tell a gone client from a half-closed one. */
const PROBE_GAP = 20;
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export interface HandlerParts {
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** The configuration in force (swapped on reload) and its stages. */
  current(): {
    readonly stages: ReadonlyArray<readonly [string, Stage]>;
    readonly config: Config;
    readonly addressing: ClientAddressing;
  };
  /** True once the gateway drains: answers then close their connection. */
  draining(): boolean;
  /**
   * True once the process met an uncaught exception: it is in an unknown state, so a new request is
   * refused with 503 (and its connection closed) instead of served.
   */
  faulted(): boolean;
}

/** The `request` listener of the API server, and a way to wait for the requests it is still working on. */
export interface RequestHandler {
  (req: IncomingMessage, res: ServerResponse): void;
  /**
   * The server's `connection` listener. A client's FIN is ambiguous: it may have gone, or only
   * half-closed after its request (allowed, and answered). So on a FIN with an answer pending, an
   * interim `102 Processing` is written, twice: a gone client answers the first with a reset, so the
   * second fails and closes the response (its deadline signal then aborts the backend call); a
   * half-closed one ignores them (1xx answers are informational) and still gets its answer.
   */
  connection(socket: Socket): void;
  /** Resolves once every request taken so far has finished its work and cleaned up (temporary files). */
  settled(): Promise<void>;
}

/** The `request` listener of the API server. */
export function createHandler(parts: HandlerParts): RequestHandler {
  const working = new Set<Promise<void>>();
  /** The latest response of each connection, while it is pending. */
  const pending = new WeakMap<Socket, ServerResponse>();
  const track = (work: Promise<unknown>) => {
    // Never rejects: a failed clean-up is not a reason to crash, only to stop waiting for it.
    const done = work.then(
      () => undefined,
      () => undefined,
    );
    working.add(done);
    void done.then(() => working.delete(done));
  };
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const rawTarget = req.url ?? '';
    const q = rawTarget.indexOf('?');
    const { stages, addressing } = parts.current();
    const ctx: RequestContext = {
      req,
      res,
      id: randomUUID(),
      startedAt: performance.now(),
      rawTarget,
      path: q === -1 ? rawTarget : rawTarget.slice(0, q),
      client: addressing.address(req),
      peerTrusted: addressing.peerTrusted(req),
      log: {},
    };
    res.setHeader('RequestID', ctx.id);
    if (parts.draining()) res.setHeader('Connection', 'close');
    pending.set(req.socket, res);
    res.once('close', () => track(finish(ctx, parts)));
    if (parts.faulted()) {
      ctx.log.reason = 'faulted';
      writeError(res, ctx.id, errors.faulted());
      return;
    }
    track(run(ctx, stages));
  };
  const probe = (socket: Socket) => {
    const res = pending.get(socket);
    if (res === undefined || res.writableFinished) return;
    if (!res.headersSent) {
      // An HTTP/1.0 client must not get a 1xx (RFC 9110 §15.2): its FIN cannot be probed.
      if (res.req.httpVersion !== '1.0' && res.writable) res.writeProcessing();
    } else {
      // A body is streaming (a relayed upstream answer) and cannot carry a probe: the client
      // that closed its side is taken to be gone, and the upstream request is aborted.
      res.destroy();
    }
  };
  return Object.assign(handler, {
    connection(socket: Socket) {
      socket.once('end', () => {
        probe(socket);
        setTimeout(() => probe(socket), PROBE_GAP).unref();
      });
    },
    async settled() {
      while (working.size > 0) await Promise.allSettled([...working]);
    },
  });
}

async function run(ctx: RequestContext, stages: ReadonlyArray<readonly [string, Stage]>): Promise<void> {
  try {
    for (const [, stage] of stages) {
      ctx.deadline?.signal.throwIfAborted();
      await stage(ctx);
    }
  } catch (err) {
    const error = toGatewayError(err, ctx.deadline?.signal);
    // An upstream's own 5xx passed through is its answer, not a failure of ours to log in full.
    if (error.status >= 500 && error.status !== 504 && !(err instanceof UpstreamStatusError))
      ctx.log.err = err;
    if (error.reason) ctx.log.reason = error.reason;
    if (!ctx.res.destroyed) writeError(ctx.res, ctx.id, error);
  }
}

/** Writes the request's log line and metrics, and releases its timer and body. */
function finish(ctx: RequestContext, parts: HandlerParts): Promise<void> {
  // Closed before its answer was finished: the client is gone, and so is any backend call for it.
  if (!ctx.res.writableFinished) ctx.deadline?.abandon();
  ctx.deadline?.dispose();
  const disposed = ctx.body?.dispose() ?? Promise.resolve();
  const { req, res } = ctx;
  const operation = ctx.route?.operation ?? 'unmatched';
  const status = res.headersSent ? res.statusCode : 0;
  const seconds = (performance.now() - ctx.startedAt) / 1000;
  const method = METHODS.has(req.method ?? '') ? (req.method as string) : 'OTHER';
  parts.metrics.requests.inc({
    operation,
    method,
    status_class: statusClass(status),
  });
  parts.metrics.requestDuration.observe({ operation }, seconds);
  // An upstream's own 504 passes through; only the gateway's deadline counts here.
  if (status === 504 && ctx.deadline?.signal.aborted) parts.metrics.deadlineExceeded.inc({ operation });
  const traceparent = req.headers.traceparent;
  requestLines(parts.logger)[status >= 500 ? 'error' : 'info'](
    {
      request_id: ctx.id,
      operation,
      method: req.method,
      path: ctx.path,
      status,
      duration_ms: Math.round(seconds * 1e6) / 1000,
      client: ctx.client,
      ...(typeof traceparent === 'string' ? { traceparent } : {}),
      ...ctx.log,
    },
    'request',
  );
  return disposed;
}

const lineLoggers = new WeakMap<Logger, Logger>();
/**
 * The logger of request lines: `logger` without its redaction paths. A request line is built from
 * chosen fields only (never headers, the query or a credential), and path redaction with wildcards
 * costs more than the rest of the line (measured: ~3.5× per line).
 */
function requestLines(logger: Logger): Logger {
  let lines = lineLoggers.get(logger);
  if (lines === undefined) {
    lines = logger.child({}, { redact: { paths: [] } });
    lineLoggers.set(logger, lines);
  }
  return lines;
}
