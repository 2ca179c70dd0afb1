/**
 * The one place a request becomes what a backend may know of it: the `BackendCall` an operation
 * passes down (the deadline's signal and, on first use, the `ForwardedRequest` an upstream sends).
 */
import type { BackendCall } from '../backends/backend-call.js';
import type { SpanParent } from '../observability/tracing/tracing.js';
import type { StopSignal } from '../upstream/stop-signal.js';
import type { IncomingHttpHeaders } from 'node:http';
import type { ClientCredentials, ForwardedRequest } from '../upstream/forwarded.js';
import type { RequestContext } from './context.js';
import { deadlineOf, stopOf } from './deadline.js';

/** A trusted proxy's `X-Forwarded-Proto`: its first entry, when it names a scheme. */
const PROTO = /^\s*(https?)\s*(?:,|$)/i;
/** A trusted proxy's `X-Forwarded-Host`: its first entry, when it is a plain host[:port]. */
const HOST = /^\s*([A-Za-z0-9.\-_:[\]]{1,255})\s*(?:,|$)/;

/**
 * What an upstream is told of `ctx`'s request. `X-Forwarded-For` is the client address as
 * computed under `server.trusted_proxies`, alone: hops a trusted proxy did not vouch for are not
 * passed on, and the service's own per-address limits see the client. `-Proto` and `-Host` come
 * from the peer when it is a trusted proxy, else from what the gateway saw.
 */
export function forwardedRequest(ctx: RequestContext): ForwardedRequest {
  return new Forwarded(ctx);
}

/**
 * A `ForwardedRequest` read off the request once (its fields read-only). The client's credentials,
 * which only `{type: client}` auth forwards, are read from its headers when asked for, not on every
 * request.
 */
class Forwarded implements ForwardedRequest {
  readonly method: string;
  readonly target: string;
  readonly contentType: string | undefined;
  readonly body: ForwardedRequest['body'];
  readonly requestId: string;
  readonly subject: string | undefined;
  readonly principal: string | undefined;
  readonly forwardedFor: string;
  readonly forwardedProto: string;
  readonly forwardedHost: string | undefined;
  readonly traceparent: string | undefined;
  readonly deadlineAt: number | undefined;
  /** The request's headers when the client identified itself (its credentials may be forwarded). */
  readonly #identified: IncomingHttpHeaders | undefined;

  constructor(ctx: RequestContext) {
    const { req } = ctx;
    const given = (name: string, form: RegExp) => {
      const value = req.headers[name];
      return ctx.peerTrusted && typeof value === 'string' ? form.exec(value)?.[1] : undefined;
    };
    const encrypted = (req.socket as { encrypted?: boolean }).encrypted === true;
    const identity = ctx.identity;
    const traceparent = req.headers.traceparent;
    this.method = req.method ?? 'GET';
    this.target = ctx.rawTarget;
    this.contentType = req.headers['content-type'];
    this.body = ctx.body;
    this.requestId = ctx.id;
    this.subject = identity?.subject;
    this.principal = identity?.principal;
    this.forwardedFor = ctx.client;
    this.forwardedProto = given('x-forwarded-proto', PROTO)?.toLowerCase() ?? (encrypted ? 'https' : 'http');
    this.forwardedHost = given('x-forwarded-host', HOST) ?? req.headers.host;
    this.traceparent = typeof traceparent === 'string' ? traceparent : undefined;
    this.deadlineAt = ctx.deadline?.expiresAt;
    this.#identified = identity === undefined ? undefined : req.headers;
  }

  get credentials(): ClientCredentials | undefined {
    return this.#identified === undefined ? undefined : credentialsOf(this.#identified);
  }
}

/** The client's own credential headers, those it sent. */
function credentialsOf(headers: IncomingHttpHeaders): ClientCredentials {
  const credentials: { authorization?: string; requestdate?: string; signature?: string } = {};
  const { authorization, requestdate, signature } = headers;
  if (authorization !== undefined) credentials.authorization = authorization;
  if (typeof requestdate === 'string') credentials.requestdate = requestdate;
  if (typeof signature === 'string') credentials.signature = signature;
  return Object.freeze(credentials);
}

/** The call an operation hands its backend for `ctx`: the signal and the forwarded request, each made on first use. */
export function backendCall(ctx: RequestContext): BackendCall {
  return new RequestCall(ctx);
}

/** One object per call, its accessors on the prototype: no closure is made per request. */
class RequestCall implements BackendCall {
  #request: ForwardedRequest | undefined;
  constructor(private readonly ctx: RequestContext) {}
  get signal(): AbortSignal {
    return deadlineOf(this.ctx);
  }
  get stop(): StopSignal {
    return stopOf(this.ctx);
  }
  get request(): ForwardedRequest {
    return (this.#request ??= forwardedRequest(this.ctx));
  }
  /** Adds `ms` to the request line's `upstream_ms`. */
  spent(ms: number): void {
    const log = this.ctx.log;
    const before = log.upstream_ms;
    log.upstream_ms = Math.round(((typeof before === 'number' ? before : 0) + ms) * 1000) / 1000;
  }
  answeredBy(target: string): void {
    this.ctx.log.upstream_target = target;
  }
  get span(): SpanParent | undefined {
    return this.ctx.span;
  }
}
