/**
 * Runs the pipeline for one request: creates the context, runs the stages in order, turns whatever
 * they throw into the error envelope, and writes the request's one log line and its metrics.
 *
 * It is the hot path of every request, so it does only what each request needs: the stages run
 * synchronously until one really returns a promise, the log line's fields are set directly, the
 * metrics' labelled children are made once, and requests in progress are counted, not kept.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { errors } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { requestRecorder, routeRecorder } from '../observability/request-recorder.js';
import type { Tracing } from '../observability/tracing/tracing.js';
import type { ClientAddressing } from './client-address.js';
import { Context, type RequestContext } from './context.js';
import { toGatewayError, writeError } from './envelope.js';
import { RequestIds } from './request-id.js';
import type { Route } from './route.js';
import type { Pipeline, Stage, Stages } from './stage.js';

/** Milliseconds between the two interim answers that tell a gone client from a half-closed one. */
const PROBE_GAP = 20;
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** The status a request is logged and counted with when its client went away first (nginx's). */
const CLIENT_GONE = 499;
/** The most of a `User-Agent` that goes into a log line. */
const USER_AGENT = 256;

export interface HandlerParts {
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** With tracing on: a server span per request, named in its log line as `trace_id`. */
  readonly tracing?: Tracing;
  /**
   * Takes the configuration in force (swapped on reload) for one request: its pipeline and how a
   * client address is found. The request runs to its end on it and then calls its `release()`, so
   * that a configuration a reload replaced closes only once nothing runs on it.
   */
  take(): {
    readonly pipeline: Pipeline;
    readonly addressing: ClientAddressing;
    release(): void;
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
  /**
   * Closes `socket` as soon as its in-flight request has been answered (at once when it has none):
   * that answer says `Connection: close` when its head is not sent yet.
   */
  retire(socket: Socket): void;
  /** Resolves once every request taken so far has finished its work and cleaned up (temporary files). */
  settled(): Promise<void>;
}

/**
 * The latest response of a connection, kept on its socket: set per request, a plain property store
 * (a `WeakMap` entry per request cost a hash-table insertion and ephemeron work for the collector).
 */
const LATEST = Symbol('latest response');
type TrackedSocket = Socket & { [LATEST]?: ServerResponse };

/** The `request` listener of the API server. */
export function createHandler(parts: HandlerParts): RequestHandler {
  /**
   * The logger of request lines: `logger` without its redaction paths. A request line is built from
   * chosen fields only (never headers, the query or a credential), and path redaction with wildcards
   * costs more than the rest of the line.
   */
  const lines = parts.logger.child({}, { redact: { paths: [] } });
  const recorder = requestRecorder(parts.metrics);
  const routes = routeRecorder(parts.metrics.routeRequests);
  const ids = new RequestIds();
  const { inFlight, clientAborts, deadlineExceeded } = parts.metrics;
  const { tracing } = parts;
  /** Requests whose work or clean-up is not over yet, and who waits for there to be none. */
  let working = 0;
  const idle: Array<() => void> = [];
  const done = () => {
    working--;
    if (working === 0) for (const resolve of idle.splice(0)) resolve();
  };

  /** Writes the request's log line and metrics, releases its deadline and body, then calls `ended`. */
  const finish = (ctx: RequestContext, ended: () => void): void => {
    const { req, res, deadline } = ctx;
    inFlight.count--;
    const route = ctx.route;
    const operation = route?.operation ?? 'unmatched';
    // Closed before its answer was finished: the client is gone, and so is any backend call for it.
    const gone = !res.writableFinished;
    if (gone) {
      deadline?.abandon();
      clientAborts.inc({ operation });
    }
    deadline?.dispose();
    const status = gone ? CLIENT_GONE : res.statusCode;
    const seconds = (performance.now() - ctx.startedAt) / 1000;
    const method = METHODS.has(req.method as string) ? (req.method as string) : 'OTHER';
    recorder.record(operation, method, status, seconds);
    if (route !== undefined) routes.record(route.name, status);
    // An upstream's own 504 passes through; only the gateway's deadline counts here.
    if (status === 504 && deadline?.timedOut) deadlineExceeded.inc({ operation });
    const line = ctx.log;
    line.request_id = ctx.id;
    line.operation = operation;
    line.route = route?.name;
    line.method = req.method;
    line.path = ctx.path;
    line.status = status;
    line.duration_ms = Math.round(seconds * 1e6) / 1000;
    line.client = ctx.client;
    line.bytes_in = ctx.body?.size ?? 0;
    line.bytes_out = ctx.bytesOut;
    const agent = req.headers['user-agent'];
    if (agent !== undefined) line.user_agent = agent.length > USER_AGENT ? agent.slice(0, USER_AGENT) : agent;
    const traceparent = req.headers.traceparent;
    if (typeof traceparent === 'string') line.traceparent = traceparent;
    const trace = ctx.trace;
    if (trace !== undefined) {
      line.trace_id = trace.traceId;
      trace.end({ status, operation, client: ctx.client });
    }
    if (status >= 500) lines.error(line, 'request');
    else lines.info(line, 'request');
    const disposed = ctx.body?.dispose();
    if (disposed === undefined) return ended();
    // A failed clean-up is not a reason to crash, only to stop waiting for it.
    disposed.then(ended, ended);
  };

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const rawTarget = req.url ?? '';
    const q = rawTarget.indexOf('?');
    const served = parts.take();
    const { pipeline, addressing } = served;
    const id = ids.next();
    const ctx = new Context(
      req,
      res,
      id,
      performance.now(),
      rawTarget,
      q === -1 ? rawTarget : rawTarget.slice(0, q),
      addressing.address(req),
      addressing.peerTrusted(req),
      parts.draining() ? ['RequestID', id, 'Connection', 'close'] : ['RequestID', id],
    );
    // Two parts end a request: its work (the stages) and its response's close (the line, the clean-up).
    working++;
    inFlight.count++;
    let open = 2;
    const part = () => {
      if (--open > 0) return;
      served.release();
      done();
    };
    (req.socket as TrackedSocket)[LATEST] = res;
    // `close` comes once: `on`, without the wrapper `once` makes per request.
    res.on('close', () => finish(ctx, part));
    if (parts.faulted()) {
      const faulted = errors.faulted();
      ctx.log.reason = 'faulted';
      ctx.log.error_code = faulted.code;
      writeError(ctx, faulted);
      part();
      return;
    }
    // Tracing off: one check, nothing made. On: the stages' spans hang from the request's span.
    if (tracing !== undefined) ctx.span = ctx.trace = tracing.request(req);
    const running = start(ctx, pipeline);
    if (running === undefined) part();
    else running.then(part, part);
  };

  const probe = (socket: Socket) => {
    const res = (socket as TrackedSocket)[LATEST];
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
    retire(socket: Socket) {
      const res = (socket as TrackedSocket)[LATEST];
      if (res === undefined || res.writableFinished) {
        socket.destroySoon();
        return;
      }
      if (!res.headersSent) res.shouldKeepAlive = false;
      // Also when a relayed answer asked to keep the connection alive.
      res.once('finish', () => socket.destroySoon());
    },
    settled() {
      if (working === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idle.push(resolve));
    },
  });
}

/** Routes the request, then runs its route's stages; never rejects (see `run`). */
function start(ctx: RequestContext, pipeline: Pipeline): Promise<void> | undefined {
  try {
    pipeline.route(ctx);
  } catch (err) {
    fail(ctx, err);
    return undefined;
  }
  return run(ctx, pipeline.stagesOf(ctx.route as Route), 0);
}

/**
 * Runs the stages from `from`, synchronously for as long as each one answers at once; returns a
 * promise only when a stage really waits (reading a body, a backend call). Never rejects: whatever a
 * stage throws becomes the error envelope.
 */
function run(ctx: RequestContext, stages: Stages, from: number): Promise<void> | undefined {
  try {
    // Resuming after a stage that waited: the deadline may have passed, or the client gone, while it
    // did. Stages that answer at once run in microseconds and nothing else runs between them, so the
    // clock is read once per resumption, not before every stage.
    if (from > 0 && from < stages.length) ctx.deadline?.check();
    for (let i = from; i < stages.length; i++) {
      const result = (stages[i] as readonly [string, Stage])[1](ctx);
      if (result !== undefined) {
        return result.then(
          () => run(ctx, stages, i + 1),
          (err: unknown) => fail(ctx, err),
        );
      }
    }
  } catch (err) {
    fail(ctx, err);
  }
  return undefined;
}

/** Answers a request whose stage threw: the catalogue error in the envelope, the details logged. */
function fail(ctx: RequestContext, err: unknown): void {
  const error = toGatewayError(err, ctx.deadline);
  if (error.status >= 500 && error.status !== 504) ctx.log.err = err;
  if (error.reason) ctx.log.reason = error.reason;
  ctx.log.error_code = error.code;
  if (!ctx.res.destroyed) writeError(ctx, error);
}
