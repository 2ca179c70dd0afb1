/**
 * What an upstream is told of the request being served: one immutable value, built once from the
 * request (`src/http/forwarded.ts`), and all that a backend or the pass-through sends besides its
 * own credentials. A fetch shared by several requests sends a neutral one (`neutralRequest`).
 */
import type { Readable } from 'node:stream';

/** A request body as it will be sent: bytes in memory, or a way to stream it (each call a new stream). */
export type OutgoingBody = Buffer | { readonly size: number; stream(): Readable };

/** The client's own credential headers, forwarded as they came under `{type: client}` auth. */
export interface ClientCredentials {
  readonly authorization?: string;
  readonly requestdate?: string;
  readonly signature?: string;
}

export interface ForwardedRequest {
  readonly method: string;
  /** The request target as the client sent it (path and query, never re-serialised). */
  readonly target: string;
  readonly contentType: string | undefined;
  /** The verified body, held; undefined for none. */
  readonly body: OutgoingBody | undefined;
  /** Our `RequestID`, sent as `X-Request-ID`. */
  readonly requestId: string | undefined;
  /** Who the client is, sent as `X-Gateway-Subject`. */
  readonly subject: string | undefined;
  /** The identity's canonical form: what a cache kept per identity is keyed by. */
  readonly principal: string | undefined;
  /** `X-Forwarded-For`, `-Proto`, `-Host` as the gateway computed them (contract §5). */
  readonly forwardedFor: string | undefined;
  readonly forwardedProto: string | undefined;
  readonly forwardedHost: string | undefined;
  /** The trace context that goes on (W3C `traceparent`). */
  readonly traceparent: string | undefined;
  /** The client's credentials, for `{type: client}` auth; undefined when it sent none to forward. */
  readonly credentials: ClientCredentials | undefined;
  /** `performance.now()` at which the request's deadline fires; undefined when it has none. */
  readonly deadlineAt: number | undefined;
}

/**
 * A request of the gateway's own for `target` (a fetch shared by several requests): no client
 * details, no deadline, no credentials but the gateway's.
 */
export function neutralRequest(method: string, target: string): ForwardedRequest {
  return Object.freeze({
    method,
    target,
    contentType: undefined,
    body: undefined,
    requestId: undefined,
    subject: undefined,
    principal: undefined,
    forwardedFor: undefined,
    forwardedProto: undefined,
    forwardedHost: undefined,
    traceparent: undefined,
    credentials: undefined,
    deadlineAt: undefined,
  });
}
