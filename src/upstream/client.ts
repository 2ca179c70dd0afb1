/**
 * One upstream service: a keep-alive undici pool with connect, header and body timeouts, the
 * outgoing authentication of its configuration, and its reachability for `/readyz`. undici's errors
 * become catalogue errors here, where they enter: unreachable 502, slow 504.
 */
import { AssertionError } from 'node:assert';
import { performance } from 'node:perf_hooks';
import { Pool, errors as undici, type Dispatcher } from 'undici';
import type { UpstreamConfig } from '../config/schema.js';
import { errors, GatewayError } from '../errors.js';
import type { RequestContext } from '../http/context.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { RequestKeys } from '../auth/signature.js';
import { readBounded, relayableStatus } from './answer.js';
import { probeReachability } from './probe.js';
import { authHeaders, forwardingHeaders, type OutgoingBody } from './outgoing.js';

/** What an upstream request is: the method and raw target as they go out, and what goes with them. */
export interface OutgoingRequest {
  readonly method: string;
  /** The request target, as the client sent it (path and query, never re-serialised). */
  readonly target: string;
  readonly body?: OutgoingBody;
  /** Extra headers (`content-type`, `accept`). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The request being served, when there is one: forwarding headers and `client` credentials. */
  readonly client?: RequestContext;
  /**
   * False for a fetch shared by several requests (the checksum cache): no one request's deadline
   * goes out as `Prefer`.
   */
  readonly prefer?: boolean;
  readonly signal: AbortSignal;
}

/** An upstream's answer, its body still streaming. */
export type UpstreamAnswer = Dispatcher.ResponseData;

export interface UpstreamClient {
  /** Sends `request`; the answer's body streams. Throws the catalogue's 502/504 when the upstream fails. */
  send(request: OutgoingRequest): Promise<UpstreamAnswer>;
  /** The whole body of `answer` (a 502 past `limit` bytes), failures translated and counted as `send`'s. */
  read(answer: UpstreamAnswer, limit: number, signal: AbortSignal): Promise<Buffer>;
  /** False after the last contact (a probe or a request) with the upstream failed. */
  ready(): boolean;
  close(): Promise<void>;
}

export interface UpstreamDeps {
  readonly metrics: Metrics;
  readonly logger: Logger;
}

/** A client for `config`; `name` labels its metrics and log lines (`collectors`, `passthrough`, …). */
export function createUpstreamClient(
  config: Omit<UpstreamConfig, 'type'>,
  name: string,
  deps: UpstreamDeps,
): UpstreamClient {
  const url = new URL(config.url);
  // A path in the URL is a prefix of every target (`http://svc/bh` sends `/bh/api/v2/...`).
  const prefix = url.pathname.replace(/\/+$/, '');
  const pool = new Pool(url.origin, {
    connections: config.connections,
    connect: { timeout: config.connect_timeout },
    headersTimeout: config.headers_timeout,
    bodyTimeout: config.body_timeout,
  });
  const { metrics, logger } = deps;
  const reachability = probeReachability(url, config.connect_timeout, name, logger);
  const keys = new RequestKeys();
  const mark = reachability.mark;

  return {
    async send(request) {
      const target = prefix + request.target;
      const headers = {
        ...(request.client ? forwardingHeaders(request.client, request.prefer ?? true) : {}),
        // A held body's size is known: it goes out with a length, not chunked.
        ...(request.body !== undefined && !Buffer.isBuffer(request.body)
          ? { 'content-length': String(request.body.size) }
          : {}),
        ...request.headers,
        ...(await authHeaders(
          config.auth,
          { method: request.method, target, body: request.body, client: request.client },
          keys,
        )),
      };
      const { body } = request;
      const started = performance.now();
      try {
        const answer = await pool.request({
          method: request.method as Dispatcher.HttpMethod,
          path: target,
          headers,
          body: body === undefined || Buffer.isBuffer(body) ? body : body.stream(),
          signal: request.signal,
        });
        if (!relayableStatus(answer.statusCode)) {
          // Not awaited: the 502 goes out at once, and the connection is released (or cut) after.
          answer.body.dump().catch(() => undefined);
          throw errors.upstreamBadAnswer('status');
        }
        mark(true);
        return answer;
      } catch (err) {
        throw translate(err, request.signal);
      } finally {
        metrics.upstreamDuration.observe({ backend: name }, (performance.now() - started) / 1000);
      }
    },
    async read(answer, limit, signal) {
      try {
        return await readBounded(answer, limit);
      } catch (err) {
        throw translate(err, signal);
      }
    },
    ready: () => reachability.ready(),
    async close() {
      reachability.close();
      await pool.close().catch(() => pool.destroy());
    },
  };

  /** The catalogue error for an undici failure, counted by kind; an abort keeps its own reason. */
  function translate(err: unknown, signal: AbortSignal): unknown {
    if (signal.aborted) {
      metrics.upstreamErrors.inc({ backend: name, kind: 'aborted' });
      return signal.reason ?? err;
    }
    const kind = err instanceof GatewayError ? (err.reason ?? 'other') : kindOf(err);
    metrics.upstreamErrors.inc({ backend: name, kind });
    if (kind === 'connect' || kind === 'dns' || kind === 'connect_timeout') mark(false, kind);
    if (kind === 'headers_timeout' || kind === 'body_timeout') return errors.upstreamTimeout(kind);
    if (err instanceof GatewayError) return err;
    return kind === 'protocol' || kind === 'too_large'
      ? errors.upstreamBadAnswer(kind)
      : errors.upstreamUnavailable(kind);
  }
}

/** A low-cardinality kind for an upstream failure (the `kind` label of `gateway_upstream_errors_total`). */
export function kindOf(err: unknown): string {
  // undici asserts on a status below 100 or an unrequested 101: a malformed answer.
  if (err instanceof AssertionError) return 'protocol';
  if (err instanceof undici.ConnectTimeoutError) return 'connect_timeout';
  if (err instanceof undici.HeadersTimeoutError) return 'headers_timeout';
  if (err instanceof undici.BodyTimeoutError) return 'body_timeout';
  if (err instanceof undici.ResponseExceededMaxSizeError) return 'too_large';
  if (err instanceof undici.HTTPParserError || err instanceof undici.ResponseContentLengthMismatchError)
    return 'protocol';
  if (err instanceof undici.SocketError) return 'reset';
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('HPE_')) return 'protocol';
  if (code === 'ECONNREFUSED' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'connect';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'reset';
  return 'other';
}
