/**
 * What an operation hands its backend with every call, besides the domain inputs: the request's
 * abort signal and, for a backend that forwards, the description of what to forward. A backend never
 * sees the HTTP request itself.
 */
import type { ForwardedRequest } from '../upstream/forwarded.js';
import type { SpanParent } from '../observability/tracing/tracing.js';
import type { StopSignal } from '../upstream/stop-signal.js';

export interface BackendCall {
  /**
   * Fires when the request's deadline passes or its client goes away: work done for the call stops.
   * It may be created on first access, so a backend that never waits need not ask for it.
   */
  readonly signal: AbortSignal;
  /**
   * The same stop as `signal`, as an `AbortEmitter` (or `signal` itself): what an upstream request
   * is given, where nothing needs an `AbortSignal`'s own methods. Made on first access.
   */
  readonly stop: StopSignal;
  /** What an upstream forwards of the request (method, raw target, body, …); built on first access. */
  readonly request: ForwardedRequest;
  /**
   * Records a call that went out (an upstream request until its answer's headers, a database
   * statement or transaction) and took `ms`: their sum is the request line's `upstream_ms`.
   */
  spent?(ms: number): void;
  /** Records which upstream target (its URL) gave the answer: the request line's `upstream_target`. */
  answeredBy?(target: string): void;
  /** With tracing on, where the call's spans hang (the request's span). */
  readonly span?: SpanParent | undefined;
}

/**
 * What a backend method gives: the value, or a promise of it. A backend that answers from memory
 * answers at once (no promise, no turn of the event loop per request); one that waits returns a promise.
 */
export type Answer<T> = T | Promise<T>;
