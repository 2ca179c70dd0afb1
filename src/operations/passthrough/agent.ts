/**
 * The pass-through's keep-alive agent, which sets each outgoing request's line and drops the headers
 * that must not go out before any byte of the request is written.
 */
import { Agent as HttpAgent, type ClientRequest } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';

/** What the agent is told of each outgoing request before any byte of it is written. */
export const OUTGOING = Symbol('outgoing request line and dropped headers');
export interface Outgoing {
  /** The request line's target: the URL's path prefix and the client's raw target. */
  readonly path: string;
  /** Incoming headers that must not go out (the proxy copies the rest). */
  readonly dropped: readonly string[];
}

/**
 * A keep-alive agent that sets each outgoing request's line and headers before any byte of it is
 * written. http-proxy-3 builds the outgoing path through a URL parser (`{x}` becomes `%7Bx%7D`, a
 * bare `?` is dropped) and copies every incoming header; the agent receives each request
 * synchronously from its constructor, so what it sets here is what goes out, whether or not a
 * pooled connection is free.
 */
export function outgoingAgent(
  https: boolean,
  options: { keepAlive: boolean; maxSockets: number },
): HttpAgent {
  const agent = https ? new HttpsAgent(options) : new HttpAgent(options);
  const addRequest = (agent as unknown as AddRequest).addRequest;
  (agent as unknown as AddRequest).addRequest = function (req, requestOptions) {
    const outgoing = requestOptions[OUTGOING] as Outgoing | undefined;
    if (outgoing !== undefined) {
      req.path = outgoing.path;
      for (const name of outgoing.dropped) req.removeHeader(name);
    }
    return addRequest.call(this, req, requestOptions);
  };
  return agent;
}

interface AddRequest {
  addRequest(req: ClientRequest, options: Record<string | symbol, unknown>): void;
}
