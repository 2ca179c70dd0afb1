/**
 * The backends' client of one upstream service: a keep-alive undici pool with connect, header and
 * body timeouts, sending what `ForwardedRequest` describes with the endpoint's headers. undici's
 * errors become catalogue errors here, where they enter (the endpoint's one rule).
 */
import { performance } from 'node:perf_hooks';
import { type Dispatcher, Pool } from 'undici';
import type { StopSignal } from './stop-signal.js';
import { errors } from '../errors.js';
import { openUpstreamTls, upstreamTlsKey } from '../tls/upstream.js';
import { passedHeaders, readBounded, UpstreamAnswer } from './answer.js';
import type { UpstreamConfig } from '../config/upstream.js';
import { clientAttributes, createEndpoint, type UpstreamDeps } from './endpoint.js';
import { type Arrived, DispatchHandler } from './dispatch-handler.js';
import type { ForwardedRequest } from './forwarded.js';

export { type Arrived, HELD } from './dispatch-handler.js';

/** One request to send: what to forward, extra headers (`accept`), and the signal that stops it. */
export interface Outgoing {
  readonly request: ForwardedRequest;
  readonly headers?: Readonly<Record<string, string>>;
  readonly signal: StopSignal;
  /** Told how long the upstream took to answer (or fail): the request line's `upstream_ms`. */
  readonly meter?: { spent?(ms: number): void };
  /**
   * Never sent again once any byte of it was written, whatever its method (a public request of the
   * front door, contract §11: an SSO callback's one-time code must not be replayed).
   */
  readonly once?: boolean;
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
  const pool = new Pool(endpoint.url.origin, {
    connections: config.connections,
    connect: tls ? tls.connector(config.connect_timeout) : { timeout: config.connect_timeout },
    headersTimeout: config.headers_timeout,
    bodyTimeout: config.body_timeout,
  });

  /** Sends `outgoing`; the answer is handed to `deliver`, whose result the promise resolves with. */
  const dispatch = <T>(
    { request, headers: extra, signal, meter }: Outgoing,
    deliver: (answer: Arrived) => T,
  ): Promise<T> => {
    const target = endpoint.prefix + request.target;
    // An empty held body (a GET's) goes out as none at all.
    const held = request.body;
    const body = held === undefined || (!Buffer.isBuffer(held) && held.size === 0) ? undefined : held;
    /** With tracing on, the request is a client span whose `traceparent` it carries. */
    const traced = (headers: Record<string, string>): Promise<T> => {
      if (tracing === undefined) return go(headers);
      const attributes = clientAttributes(endpoint.url, request.method, target, name);
      return tracing.span(request.method, 'client', attributes, (span) => {
        headers.traceparent = span.traceparent();
        return go(headers, (answer) => span.set({ 'http.response.status_code': answer.statusCode }));
      });
    };
    const go = (headers: Record<string, string>, arrived?: (answer: Arrived) => void): Promise<T> => {
      if (extra !== undefined) Object.assign(headers, extra);
      if (request.contentType !== undefined) headers['content-type'] = request.contentType;
      // A held body's size is known: it goes out with a length, not chunked.
      if (body !== undefined && !Buffer.isBuffer(body)) headers['content-length'] = String(body.size);
      const started = performance.now();
      return new Promise<T>((resolve, reject) => {
        const exchange = new DispatchHandler(request.method, signal, {
          head() {
            meter?.spent?.(performance.now() - started);
            endpoint.answered(started);
          },
          resolve(answer) {
            arrived?.(answer);
            resolve(deliver(answer));
          },
          reject(err, beforeHead) {
            if (!beforeHead) return reject(endpoint.failed(err, signal));
            meter?.spent?.(performance.now() - started);
            reject(endpoint.failed(err, signal, started));
          },
        });
        pool.dispatch(
          {
            method: request.method as Dispatcher.HttpMethod,
            path: target,
            headers,
            body: body === undefined || Buffer.isBuffer(body) ? body : body.stream(),
          },
          exchange,
        );
      });
    };
    const headers = endpoint.headers(request, target, body);
    return headers instanceof Promise ? headers.then(traced) : traced(headers);
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
    ready: () => endpoint.ready(),
    async close() {
      endpoint.close();
      tls?.close();
      await pool.close().catch(() => pool.destroy());
    },
  };
}
