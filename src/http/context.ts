/**
 * The request context that flows through the pipeline. Each field past the first block is written by
 * exactly one stage, named beside it; later stages only read it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorCode } from '../errors.js';
import type { Identity } from './identity.js';
import type { RequestTrace, SpanParent } from '../observability/tracing/tracing.js';
import type { HeldBody } from './body.js';
import type { Deadline } from './deadline.js';
import type { Route } from './route.js';

export interface RequestContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** `RequestID` of this request (uuid v4), set before any stage runs. */
  readonly id: string;
  /** `performance.now()` when the request arrived. */
  readonly startedAt: number;
  /** The request target exactly as on the request line. */
  readonly rawTarget: string;
  /** The target's path, without the query. */
  readonly path: string;
  /** The client's address, behind the trusted proxies (`server.trusted_proxies`). */
  readonly client: string;
  /** Whether the peer that connected is a trusted proxy (its forwarding headers may be read). */
  readonly peerTrusted: boolean;
  /**
   * The gateway's own response headers, as a flat `[name, value, …]` list that every answer is
   * written with (`RequestID` first; stages add theirs, e.g. `Preference-Applied`): one `writeHead`,
   * no `setHeader`, whoever answers.
   */
  readonly headers: string[];
  /** Body bytes written to the client so far (the log line's `bytes_out`), kept by the writers. */
  bytesOut: number;

  /** Written by the route stage. */
  route?: Route;
  /** Written by the deadline stage (`Prefer`). */
  deadline?: Deadline;
  /** Written by the authenticate stage. */
  identity?: Identity;
  /**
   * Written by the authenticate stage (the body, read under the limit and verified), or on a public
   * route of the front door by its body stage.
   */
  body?: HeldBody;
  /** Written by the handler when tracing is on: the request's server span. */
  trace?: RequestTrace;
  /**
   * With tracing on, where the spans of the stage running now hang: the server span, or the
   * authenticate stage's own span while it runs (a key fetch it causes is its child).
   */
  span?: SpanParent;
  /** Written by the error writer or the operation: extra fields for the request's log line. */
  log: Record<string, unknown>;
}

/**
 * The fields of a request's log line, every one there from the start (unset ones are `undefined`,
 * which pino leaves out), in the order they are printed: every line has the one shape, whichever
 * stages wrote to it, instead of a shape built property by property per request. Fields outside
 * this list (a refusal's details) are added as they come.
 */
export class RequestLine {
  [field: string]: unknown;
  request_id: string | undefined = undefined;
  operation: string | undefined = undefined;
  /** The route's name (contract §11): an operation's id, or a front-door route's name. */
  route: string | undefined = undefined;
  method: string | undefined = undefined;
  path: string | undefined = undefined;
  status: number | undefined = undefined;
  duration_ms: number | undefined = undefined;
  client: string | undefined = undefined;
  bytes_in: number | undefined = undefined;
  bytes_out: number | undefined = undefined;
  user_agent: string | undefined = undefined;
  traceparent: string | undefined = undefined;
  trace_id: string | undefined = undefined;
  auth_scheme: string | undefined = undefined;
  subject: string | undefined = undefined;
  token_id: string | undefined = undefined;
  auth_failure: string | undefined = undefined;
  rate_limit_policy: string | undefined = undefined;
  upstream_ms: number | undefined = undefined;
  upstream_request_id: string | undefined = undefined;
  /** The upstream target that gave the answer (its URL), when the request went to one. */
  upstream_target: string | undefined = undefined;
  reason: string | undefined = undefined;
  /** The stable code (`GW_…`) of the error the gateway answered with; none on a relayed answer. */
  error_code: ErrorCode | undefined = undefined;
  err: unknown = undefined;
}

/**
 * A request's context as the handler makes it: every field there from the start, so that each
 * request's context has the one shape as the stages fill it in (a literal given its stage fields one
 * by one took a new shape per stage, and every reader saw several).
 */
export class Context implements RequestContext {
  route: Route | undefined = undefined;
  deadline: Deadline | undefined = undefined;
  identity: Identity | undefined = undefined;
  body: HeldBody | undefined = undefined;
  trace: RequestTrace | undefined = undefined;
  span: SpanParent | undefined = undefined;
  bytesOut = 0;
  readonly log = new RequestLine();

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly id: string,
    readonly startedAt: number,
    readonly rawTarget: string,
    readonly path: string,
    readonly client: string,
    readonly peerTrusted: boolean,
    readonly headers: string[],
  ) {}
}
