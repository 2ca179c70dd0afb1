/**
 * The seam between the gateway and OpenTelemetry (contract §10). The request path knows only these
 * interfaces; the SDK is imported (dynamically, by load.ts) only when `tracing` is configured, so a gateway
 * without it loads none of it and pays one `undefined` check per request.
 */
import type { IncomingMessage } from 'node:http';

/** Span attribute values: HTTP semantic-convention names, never credentials or query strings. */
export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/** What a child span's work may do with its span. */
export interface SpanHandle {
  /** The W3C `traceparent` naming this span: what an outgoing request carries. */
  traceparent(): string;
  /** Adds attributes (a response status, …). */
  set(attributes: SpanAttributes): void;
}

/** The server span of one request. */
export interface RequestTrace {
  /** The trace's id (32 hex digits): the request line's `trace_id`. */
  readonly traceId: string;
  /** Ends the span with what the answer was (`client`: the address behind the trusted proxies). */
  end(answer: { status: number; operation: string; client: string }): void;
}

/**
 * Where a new span hangs: a request's server span, or a span started under it. Handed down
 * explicitly (the request context's `span`, a backend call's `span`), not found in an async-local
 * store: on Node 20, an AsyncLocalStorage once entered makes every promise of the process pay a hook.
 */
export type SpanParent = RequestTrace | SpanHandle;

export interface Tracing {
  /** Starts the server span of `req`, continuing its `traceparent` when it has a valid one. */
  request(req: IncomingMessage): RequestTrace;
  /**
   * Runs `work` in a span `name`, a child of `parent` (a root span when there is none: a background
   * refresh). The span ends when `work`'s promise settles (or at once when it returns no promise); a
   * rejection marks it failed with its error's kind.
   */
  span<T>(
    name: string,
    kind: 'internal' | 'client',
    attributes: SpanAttributes,
    parent: SpanParent | undefined,
    work: (span: SpanHandle) => T,
  ): T;
  /** Sends the spans still held and stops. */
  shutdown(): Promise<void>;
}
