/**
 * The request context that flows through the pipeline. Each field past the first block is written by
 * exactly one stage, named beside it; later stages only read it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Identity } from '../auth/identity.js';
import type { RequestTrace } from '../observability/tracing/tracing.js';
import type { HeldBody } from './body.js';
import type { Deadline } from './deadline.js';
import type { Route } from './router.js';

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
  /** Written by the authenticate stage: the body, read under the limit and verified. */
  body?: HeldBody;
  /** Written by the handler when tracing is on: the request's server span. */
  trace?: RequestTrace;
  /** Written by the error writer or the operation: extra fields for the request's log line. */
  log: Record<string, unknown>;
}
