/**
 * The backends' client of one upstream service: a keep-alive undici pool per target with connect,
 * header and body timeouts, sending what `ForwardedRequest` describes with the endpoint's headers to
 * the target the target set picks, and again to another where the retry rules allow. undici's
 * errors become catalogue errors here, where they enter (the endpoint's one rule).
 */
import { performance } from 'node:perf_hooks';
import type { Dispatcher, Pool } from 'undici';
import type { StopSignal } from './stop-signal.js';
import { errors } from '../errors.js';
import { openUpstreamTls, upstreamTlsKey } from '../tls/upstream.js';
import { passedHeaders, readBounded, UpstreamAnswer } from './answer.js';
import type { UpstreamConfig } from '../config/upstream.js';
import { clientAttributes, createEndpoint, type UpstreamDeps } from './endpoint.js';
import { type Arrived, DispatchHandler } from './dispatch-handler.js';
import type { ForwardedRequest, OutgoingBody } from './forwarded.js';
import type { SpanParent } from '../observability/tracing/tracing.js';
import type { Attempt, Sending } from './attempts.js';
import { openTargets, type Reached } from './upstream-targets.js';
import { undici } from './undici.js';

export { type Arrived, HELD } from './dispatch-handler.js';

/** One request to send: what to forward, extra headers (`accept`), and the signal that stops it. */
export interface Outgoing {
  readonly request: ForwardedRequest;
  readonly headers?: Readonly<Record<string, string>>;
  readonly signal: StopSignal;
  /**
   * Told how long the upstream took to answer (or fail), the request line's `upstream_ms`, and which
   * target gave the answer, its `upstream_target`.
   */
  readonly meter?: { spent?(ms: number): void; answeredBy?(target: string): void };
  /**
   * False for a public request of the front door (contract §11): never sent again once any byte of
   * it was written, whatever its method (an SSO callback's one-time code). Absent: true.
   */
  readonly replayable?: boolean;
  /** With tracing on, where each attempt's client span hangs (the request's span). */
  readonly parent?: SpanParent | undefined;
}

export interface UpstreamClient {
  /**
   * Sends `outgoing`. The answer comes whole when it declared at most `HELD` bytes (an upstream
   * failing mid-body is then a clean 502 or 504, never a cut answer), else at its head with the
   * body streaming. Throws the catalogue's 502/504 when the upstream fails.
   */
  send(outgoing: Outgoing): Promise<Arrived>;
  /**
   * Sends `outgoing` as `send` does and resolves with the answer as it is relayed (its status, the
   * headers that describe its body, the body), in the one promise.
   */
  relay(outgoing: Outgoing): Promise<UpstreamAnswer>;
  /** The whole body of `answer` (a 502 past `limit` bytes), failures translated as `send`'s. */
  read(answer: Arrived, limit: number, signal: StopSignal): Promise<Buffer>;
  ready(): boolean;
  close(): Promise<void>;
}

/** A client for `config`; `name` labels its metrics and log lines (`collectors`, …). */
export function createUpstreamClient(
  config: UpstreamConfig,
  name: string,
  deps: UpstreamDeps,
): UpstreamClient {
  const tls =
    config.tls &&
    openUpstreamTls(config.tls, upstreamTlsKey(name), { logger: deps.logger, metrics: deps.metrics.tls });
  const endpoint = createEndpoint(config, name, deps);
  const { tracing } = deps;
  const connect = tls ? tls.connector(config.connect_timeout) : { timeout: config.connect_timeout };
  // One keep-alive pool per target: the pick among them is the target set's (`balance.ts` says why).
  const targets = openTargets(
    config,
    name,
    deps,
    (url) =>
      new (undici().Pool)(url.origin, {
        connections: config.connections,
        connect,
        headersTimeout: config.headers_timeout,
        bodyTimeout: config.body_timeout,
      }),
    connect,
  );

  /** One attempt of `outgoing` on `attempt.target`: its answer, or the catalogue's 502/504. */
  const attempt = (
    { request, headers: extra, signal, meter, parent }: Outgoing,
    body: OutgoingBody | undefined,
    { target, written }: Attempt<Reached<Pool>>,
  ): Promise<Arrived> => {
    const path = target.prefix + request.target;
    /** With tracing on, the attempt is a client span whose `traceparent` it carries. */
    const traced = (headers: Record<string, string>): Promise<Arrived> => {
      if (tracing === undefined) return go(headers);
      const attributes = clientAttributes(target.url, request.method, path, name);
      return tracing.span(request.method, 'client', attributes, parent, (span) => {
        headers.traceparent = span.traceparent();
        return go(headers, (answer) => span.set({ 'http.response.status_code': answer.statusCode }));
      });
    };
    const go = (headers: Record<string, string>, arrived?: (answer: Arrived) => void): Promise<Arrived> => {
      if (extra !== undefined) Object.assign(headers, extra);
      if (request.contentType !== undefined) headers['content-type'] = request.contentType;
      // A held body's size is known: it goes out with a length, not chunked.
      if (body !== undefined && !Buffer.isBuffer(body)) headers['content-length'] = String(body.size);
      const started = performance.now();
      return new Promise<Arrived>((resolve, reject) => {
        const exchange = new DispatchHandler(request.method, signal, {
          written,
          head() {
            meter?.spent?.(performance.now() - started);
            endpoint.answered(started);
            targets.contact(target, true);
          },
          resolve(answer) {
            arrived?.(answer);
            resolve(answer);
          },
          reject(err, beforeHead) {
            if (!beforeHead) return reject(endpoint.failed(err, signal));
            meter?.spent?.(performance.now() - started);
            const failure = endpoint.failed(err, signal, started);
            targets.contact(target, false, failure);
            reject(failure);
          },
        });
        target.transport.transport.dispatch(
          {
            method: request.method as Dispatcher.HttpMethod,
            path,
            headers,
            body: body === undefined || Buffer.isBuffer(body) ? body : body.stream(),
          },
          exchange,
        );
      });
    };
    const headers = endpoint.headers(request, path, body);
    return headers instanceof Promise ? headers.then(traced) : traced(headers);
  };

  /** Sends `outgoing` to the targets; the answer that is kept is handed to `deliver`. */
  const dispatch = async <T>(outgoing: Outgoing, deliver: (answer: Arrived) => T): Promise<T> => {
    const { request, signal, meter } = outgoing;
    // An empty held body (a GET's) goes out as none at all.
    const held = request.body;
    const body = held === undefined || (!Buffer.isBuffer(held) && held.size === 0) ? undefined : held;
    const sending: Sending = {
      method: request.method,
      replayable: outgoing.replayable ?? true,
      signal,
      ...(request.deadlineAt === undefined ? {} : { deadlineAt: request.deadlineAt }),
    };
    const { answer, target } = await targets.send(sending, {
      send: (a) => attempt(outgoing, body, a),
      status: (a) => a.statusCode,
      discard: (a) => {
        if (!Buffer.isBuffer(a.body)) a.body.destroy();
      },
      settle: (a, end) => {
        if (Buffer.isBuffer(a.body) || a.body.closed) end();
        else a.body.once('close', end);
      },
    });
    meter?.answeredBy?.(target.name);
    return deliver(answer);
  };
  /** `answer` as it is relayed: its status, body-describing headers and body. */
  const relayed = (answer: Arrived) =>
    new UpstreamAnswer(answer.statusCode, passedHeaders(answer.headers), answer.body);

  return {
    send: (outgoing) => dispatch(outgoing, (answer) => answer),
    relay: (outgoing) => dispatch(outgoing, relayed),
    read(answer, limit, signal) {
      const { body } = answer;
      if (Buffer.isBuffer(body)) {
        if (body.length <= limit) return Promise.resolve(body);
        return Promise.reject(endpoint.failed(errors.upstreamBadAnswer('too_large'), signal));
      }
      return readBounded(body, limit).catch((err: unknown) => {
        throw endpoint.failed(err, signal);
      });
    },
    ready: () => targets.ready(),
    async close() {
      await targets.close();
      tls?.close();
      await Promise.all(
        targets.set.targets.map(({ transport: { transport: pool } }) =>
          pool.close().catch(() => pool.destroy()),
        ),
      );
    },
  };
}
