/**
 * One upstream service as every path to it sees it (the undici client of the backends and the
 * pass-through's proxy alike): the headers the gateway adds to what it forwards, its own
 * credentials, and how a failure becomes a catalogue error (502/504) and is counted. Its targets,
 * their balancing and readiness are `upstream-targets.ts`'s.
 */
import { AssertionError } from 'node:assert';
import { performance } from 'node:perf_hooks';
import { errors, GatewayError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { SpanAttributes, Tracing } from '../observability/tracing/tracing.js';
import { undici } from './undici.js';
import { formatRequestDate } from '../signing/request-date.js';
import { RequestKeys } from '../signing/request-keys.js';
import type { UpstreamConfig } from '../config/upstream.js';
import type { ForwardedRequest, OutgoingBody } from './forwarded.js';

export interface UpstreamDeps {
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Traces each request as a client span and sends its `traceparent`; absent when tracing is off. */
  readonly tracing?: Tracing;
}

/**
 * The client span's attributes of a request to `url` for `target` (HTTP semantic conventions; the
 * URL without its query, never a credential).
 */
export function clientAttributes(url: URL, method: string, target: string, backend: string): SpanAttributes {
  const q = target.indexOf('?');
  return {
    'http.request.method': method,
    'server.address': url.hostname,
    'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
    'url.full': `${url.origin}${q === -1 ? target : target.slice(0, q)}`,
    'gateway.backend': backend,
  };
}

export interface UpstreamEndpoint {
  /** The label of its metrics and log lines (`collectors`, …, `passthrough`). */
  readonly name: string;
  /**
   * The headers the gateway sets on a request to this upstream for `request`: forwarding, request
   * id, subject, `Prefer` with the seconds left, `traceparent`, and the credentials of its `auth`,
   * signed over exactly `method`, `target` (prefixed) and `body` as they go out. At once, unless a
   * held body must be read to be signed.
   */
  headers(
    request: ForwardedRequest,
    target: string,
    body: OutgoingBody | undefined,
  ): Record<string, string> | Promise<Record<string, string>>;
  /** Records an answer's arrival (`started`: `performance.now()` when the request went out). */
  answered(started: number): void;
  /**
   * The catalogue error for a failure of a request under `signal`: the signal's own reason when it
   * fired (the client's deadline, or the client gone; not counted as an upstream error), else 502 or
   * 504, counted by kind (the catalogue error's `reason`).
   */
  failed(
    err: unknown,
    signal: { readonly aborted: boolean; readonly reason: unknown },
    started?: number,
  ): unknown;
}

/** The endpoint for `config`; `name` labels its metrics and log lines. */
export function createEndpoint(config: UpstreamConfig, name: string, deps: UpstreamDeps): UpstreamEndpoint {
  const keys = new RequestKeys();
  const date = requestDates();
  const { metrics } = deps;
  const duration = metrics.upstreamDuration.series(name);
  const observe = (started: number) => duration.observe((performance.now() - started) / 1000);
  const { auth } = config;
  /** The `Authorization` the gateway's own credentials send, the same on every request (none for `client`). */
  const authorization =
    auth.type === 'bearer'
      ? `Bearer ${auth.token}`
      : auth.type === 'client'
        ? undefined
        : `${auth.scheme} ${auth.token_id}`;

  return {
    name,
    headers(request, target, body) {
      const headers = forwardingHeaders(request);
      if (auth.type === 'bearer') {
        headers.authorization = authorization as string;
        return headers;
      }
      if (auth.type === 'client') {
        const { credentials } = request;
        if (credentials?.authorization !== undefined) headers.authorization = credentials.authorization;
        if (credentials?.requestdate !== undefined) headers.requestdate = credentials.requestdate;
        if (credentials?.signature !== undefined) headers.signature = credentials.signature;
        return headers;
      }
      // Re-signed over exactly what goes out; repeated requests (the same method and target within
      // the hour) reuse their signing key.
      const requestDate = date();
      headers.authorization = authorization as string;
      headers.requestdate = requestDate;
      const { method } = request;
      if (body === undefined || (Buffer.isBuffer(body) ? body.length : body.size) === 0) {
        headers.signature = keys.emptyText(auth.token_id, auth.token_key, method, target, requestDate);
        return headers;
      }
      const digest = keys.open(auth.token_id, auth.token_key, method, target, requestDate);
      const signed = () => {
        headers.signature = digest.digest().toString('base64');
        return headers;
      };
      if (Buffer.isBuffer(body)) {
        digest.update(body);
        return signed();
      }
      return (async () => {
        for await (const chunk of body.stream()) digest.update(chunk as Buffer);
        return signed();
      })();
    },
    answered(started) {
      observe(started);
    },
    failed(err, signal, started) {
      if (started !== undefined) observe(started);
      // The client went away or its own deadline fired: not a fault of the upstream, not counted.
      if (signal.aborted) return signal.reason ?? err;
      const kind = err instanceof GatewayError ? (err.reason ?? 'other') : kindOf(err);
      metrics.upstreamErrors.inc({ backend: name, kind });
      if (err instanceof GatewayError) return err;
      if (kind === 'headers_timeout' || kind === 'body_timeout') return errors.upstreamTimeout(kind);
      return kind === 'protocol' || kind === 'too_large' || kind === 'status'
        ? errors.upstreamBadAnswer(kind, err)
        : errors.upstreamUnavailable(kind);
    },
  };
}

/** The headers that say who the client is and how long the upstream may take. */
function forwardingHeaders(request: ForwardedRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  if (request.forwardedFor !== undefined) headers['x-forwarded-for'] = request.forwardedFor;
  if (request.forwardedProto !== undefined) headers['x-forwarded-proto'] = request.forwardedProto;
  if (request.forwardedHost !== undefined) headers['x-forwarded-host'] = request.forwardedHost;
  if (request.requestId !== undefined) headers['x-request-id'] = request.requestId;
  if (request.subject !== undefined) headers['x-gateway-subject'] = request.subject;
  if (request.traceparent !== undefined) headers.traceparent = request.traceparent;
  if (request.deadlineAt !== undefined) {
    const seconds = Math.max(1, Math.ceil((request.deadlineAt - performance.now()) / 1000));
    headers.prefer = `wait=${seconds}`;
  }
  return headers;
}

/**
 * Now as a `RequestDate`, formatted once per second (every request going out in that second shares
 * the string, and with it its signing key's cache entry).
 */
function requestDates(): () => string {
  let second = -1;
  let text = '';
  return () => {
    const now = Math.floor(Date.now() / 1000);
    if (now !== second) {
      second = now;
      text = formatRequestDate(now * 1000);
    }
    return text;
  };
}

/**
 * A low-cardinality kind for an upstream failure (the `kind` label of
 * `gateway_upstream_errors_total`), from undici's errors and Node's socket and parser errors alike.
 */
export function kindOf(err: unknown): string {
  // undici asserts on a status below 100 or an unrequested 101: a malformed answer.
  if (err instanceof AssertionError) return 'protocol';
  const { errors: undiciErrors } = undici();
  if (err instanceof undiciErrors.ConnectTimeoutError) return 'connect_timeout';
  if (err instanceof undiciErrors.HeadersTimeoutError) return 'headers_timeout';
  if (err instanceof undiciErrors.BodyTimeoutError) return 'body_timeout';
  if (err instanceof undiciErrors.ResponseExceededMaxSizeError) return 'too_large';
  if (
    err instanceof undiciErrors.HTTPParserError ||
    err instanceof undiciErrors.ResponseContentLengthMismatchError
  )
    return 'protocol';
  // A 101 naming a protocol nobody asked for: undici says so only in the message.
  if (err instanceof undiciErrors.SocketError) return err.message === 'bad upgrade' ? 'status' : 'reset';
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('HPE_')) return 'protocol';
  if (code === 'ECONNREFUSED' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'connect';
  if (code === 'ETIMEDOUT') return 'connect_timeout';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'reset';
  return 'other';
}
